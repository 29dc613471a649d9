import { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { postChat, useGateway } from './support/chat-support';
import { launchChromium, pageOverflow, screenshot } from './support/dashboard-browser';
import { axeFindings } from './support/axe';
import { TEST_ADMIN_TOKEN } from './support/test-app';

/** dev-echo priced so that one short request costs a few hundred micro-dollars: enough to put a key at 40% of a limit. */
const DEV_ECHO_PRICE = { input_price_per_million: 100, output_price_per_million: 100 };

const micros = (usd: string) => BigInt(usd.replace('.', ''));
const hello = { model: 'dev-echo', messages: [{ role: 'user', content: 'hello from the dashboard test' }] };

/**
 * Keys and the account managed from the dashboard (issue 48, items 3 and 4; DESIGN.md 12.5), in Chromium, against the
 * real gateway: each action is confirmed in a dialog, sent over the admin API, shown at once, and in the audit.
 */
describe('dashboard: keys and account managed in the page (browser)', () => {
  const suite = useGateway({
    config: (raw) => Object.assign(raw.catalog.find((m: { id: string }) => m.id === 'dev-echo'), DEV_ECHO_PRICE),
  });
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let accountId: string;
  /** Requests the page sent other than reads: a cancelled action must send none. */
  const writes: string[] = [];
  let secret = '';
  let keyId = '';

  const keysOf = async () => (await suite.admin.request('GET', `/accounts/${accountId}/keys`)).body.data as any[];
  const keyRow = (prefix: string) => page.locator('#keys tbody tr').filter({ has: page.locator('.key-prefix', { hasText: prefix }) });
  const form = (name: string) => page.getByRole('form', { name });
  const dialog = () => page.getByRole('dialog');

  /** Confirms the open dialog with its confirm button, and waits for the page to show the result in `where`. */
  async function confirm(button: string, where: Locator, result: RegExp) {
    await dialog().getByRole('button', { name: button, exact: true }).click();
    await where.getByText(result).waitFor();
  }

  beforeAll(async () => {
    browser = await launchChromium();
    const account = await suite.admin.createAccount({ name: 'Managed in the page', creditsUsd: '5', subscription: 'active' });
    accountId = account.accountId;
    context = await browser.newContext({ viewport: { width: 1280, height: 1000 }, permissions: ['clipboard-read', 'clipboard-write'] });
    page = await context.newPage();
    page.on('request', (r) => {
      if (r.method() !== 'GET') writes.push(`${r.method()} ${new URL(r.url()).pathname}`);
    });
    await page.goto(`${suite.gw.url}/dashboard#${new URLSearchParams({ account: accountId })}`);
    await page.getByLabel('Admin token').fill(TEST_ADMIN_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#keys tbody tr').first().waitFor();
  });
  afterAll(async () => {
    await context?.close();
    await browser?.close();
  });

  it('creates a key: its secret is shown once, works, and is gone from the page once the dialog is closed', async () => {
    const create = form('New key');
    await create.getByLabel('Name').fill('page-made');
    await create.getByLabel('Monthly limit (USD)').fill('8');
    await create.getByLabel('Models').fill('dev-echo');
    await page.getByRole('button', { name: 'Create key' }).click();
    expect(await dialog().getByRole('heading').textContent()).toContain('Create a key for Managed in the page');
    expect(await dialog().textContent()).toContain('$8');
    await dialog().getByRole('button', { name: 'Create', exact: true }).click();

    const shown = page.getByRole('dialog', { name: /New key page-made/ });
    await shown.waitFor();
    expect(await shown.textContent()).toContain('shown only this once');
    secret = (await shown.locator('code').textContent())!;
    expect(secret).toMatch(/^gwk_/);
    await shown.getByRole('button', { name: 'Copy' }).click();
    await page.waitForFunction((want) => (globalThis as any).navigator.clipboard.readText().then((t: string) => t === want), secret);
    expect((await postChat(suite.gw, secret, hello)).status).toBe(200);

    await shown.getByRole('button', { name: 'Close' }).click();
    await shown.waitFor({ state: 'hidden' });
    expect(await page.content()).not.toContain(secret);
    const made = (await keysOf()).find((k) => k.name === 'page-made');
    expect(made).toMatchObject({ monthly_limit_usd: '8.000000', models: ['dev-echo'], revoked_at: null });
    keyId = made.id;
    // Reflected at once: the new key has its row, marked as restricted, with its limit.
    const row = keyRow(made.prefix);
    await row.waitFor();
    expect(await row.textContent()).toContain('1 model only');
    expect(await row.textContent()).toContain('of $8.000000');
  });

  it('edits the key: limit, expiry, models, rpm and tpm as the admin API then answers them', async () => {
    const [made] = (await keysOf()).filter((k) => k.id === keyId);
    await keyRow(made.prefix).getByRole('button', { name: /^Edit/ }).click();
    const edit = form(`Edit key page-made ${made.prefix}`);
    expect(await edit.getByLabel('Name').evaluate((el: any) => el === (globalThis as any).document.activeElement)).toBe(true);
    const expires = new Date(Date.now() + 3 * 86_400_000).toISOString().slice(0, 16);
    await edit.getByLabel('Monthly limit (USD)').fill('12.5');
    await edit.getByLabel('Expires at (UTC)').fill(expires);
    await edit.getByLabel('Models').fill('dev-echo, local-tts');
    await edit.getByLabel('Requests per minute (rpm)').fill('30');
    await edit.getByLabel('Tokens per minute (tpm)').fill('50000');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    const summary = await dialog().textContent();
    expect(summary).toContain('$8.000000 → $12.5');
    expect(summary).toContain('the default → 30');
    await confirm('Save', edit, /^Saved:/);

    const after = (await keysOf()).find((k) => k.id === keyId);
    expect(after).toMatchObject({ monthly_limit_usd: '12.500000', expires_at: `${expires}:00.000Z`, models: ['dev-echo', 'local-tts'], rpm: 30, tpm: 50000 });
    const row = keyRow(made.prefix);
    await row.getByText('expires in 3 days').waitFor();
    expect(await row.textContent()).toContain('2 models only');
    expect(await row.locator('[data-col=rates]').textContent()).toBe('30 rpm, 50,000 tpm');

    // Clearing a field clears the control (null): the models again all, the rpm the default.
    await edit.getByLabel('Models').fill('');
    await edit.getByLabel('Requests per minute (rpm)').fill('');
    await edit.getByLabel('Requests per minute (rpm)').press('Enter');
    await confirm('Save', edit, /^Saved: models, requests per minute/);
    expect((await keysOf()).find((k) => k.id === keyId)).toMatchObject({ models: null, rpm: null, tpm: 50000 });
  });

  it("shows the API's refusal next to the form, and sends nothing when the confirmation is cancelled", async () => {
    const [made] = (await keysOf()).filter((k) => k.id === keyId);
    const edit = form(`Edit key page-made ${made.prefix}`);
    if (!(await edit.isVisible())) await keyRow(made.prefix).getByRole('button', { name: /^Edit/ }).click();
    // Text the browser lets through, which the catalog does not know.
    await edit.getByLabel('Models').fill('no-such-model');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await dialog().getByRole('button', { name: 'Save', exact: true }).click();
    const alert = edit.getByRole('alert');
    await alert.getByText('models[0] is not a model of the catalog').waitFor();
    expect((await keysOf()).find((k) => k.id === keyId).models).toBeNull();
    await edit.getByRole('button', { name: 'Cancel' }).click();
    expect(await edit.isVisible()).toBe(false);

    // Cancelled, by the button and by Escape: nothing is sent, focus comes back to the form's button.
    const credits = form('Add credits');
    const before = (await suite.admin.account(accountId)).credits_usd;
    const sent = writes.length;
    await credits.getByLabel('Amount (USD)').fill('3');
    await credits.getByRole('button', { name: 'Add credits' }).click();
    await dialog().getByRole('button', { name: 'Cancel' }).click();
    await dialog().waitFor({ state: 'hidden' });
    await credits.getByLabel('Amount (USD)').press('Enter');
    await dialog().waitFor();
    expect(await dialog().evaluate((d: any) => d.contains((globalThis as any).document.activeElement))).toBe(true);
    await page.keyboard.press('Escape');
    await dialog().waitFor({ state: 'hidden' });
    expect(await credits.getByLabel('Amount (USD)').evaluate((el: any) => el === (globalThis as any).document.activeElement)).toBe(true);
    expect(writes.length).toBe(sent);
    expect((await suite.admin.account(accountId)).credits_usd).toBe(before);

    // A value the browser refuses (more than 6 decimals) is never sent either.
    await credits.getByLabel('Amount (USD)').fill('0.0000001');
    await credits.getByRole('button', { name: 'Add credits' }).click();
    expect(await dialog().isVisible()).toBe(false);
    expect(await credits.getByLabel('Amount (USD)').evaluate((el: any) => el.validity.stepMismatch)).toBe(true);
    expect(writes.length).toBe(sent);
  });

  it('adds credits (by exactly the amount) and sets the monthly limit, shown at once', async () => {
    const before = micros((await suite.admin.account(accountId)).credits_usd);
    const credits = form('Add credits');
    await credits.getByLabel('Amount (USD)').fill('1.234567');
    await credits.getByRole('button', { name: 'Add credits' }).click();
    expect(await dialog().textContent()).toContain('$1.234567');
    await confirm('Add credits', credits, /^Added \$1\.234567: credits are now/);
    const after = await suite.admin.account(accountId);
    expect(micros(after.credits_usd) - before).toBe(1_234_567n);
    await page.locator('#account-facts').getByText(`$${after.credits_usd}`).waitFor();

    const limit = form('Monthly spending limit');
    await limit.getByLabel('Monthly limit (USD)').fill('20');
    await limit.getByRole('button', { name: 'Save monthly limit' }).click();
    await confirm('Set the limit', limit, /^The monthly limit is now \$20\.000000/);
    expect((await suite.admin.account(accountId)).monthly_limit_usd).toBe('20.000000');
    expect(await limit.getByLabel('Monthly limit (USD)').inputValue()).toBe('20.000000');

    const limits = form('Rate limits and low-credits alert');
    await limits.getByLabel('Requests per minute (rpm)').fill('120');
    await limits.getByLabel('Low-credits alert below (USD)').fill('0.5');
    await limits.getByRole('button', { name: 'Save limits' }).click();
    await confirm('Save', limits, /^Saved: requests per minute, low-credits alert/);
    expect(await suite.admin.account(accountId)).toMatchObject({ rpm: 120, tpm: null, low_credits_usd: '0.500000' });
  });

  it('rotates the key: the new one works, the old one is marked replaced, in its grace period', async () => {
    const [old] = (await keysOf()).filter((k) => k.id === keyId);
    await keyRow(old.prefix).getByRole('button', { name: /^Rotate/ }).click();
    await dialog().getByLabel('Grace period (seconds)').fill('600');
    await dialog().getByRole('button', { name: 'Rotate', exact: true }).click();
    const shown = page.getByRole('dialog', { name: /New key page-made/ });
    await shown.waitFor();
    const rotated = (await shown.locator('code').textContent())!;
    await shown.getByRole('button', { name: 'Close' }).click();
    expect((await postChat(suite.gw, rotated, hello)).status).toBe(200);
    expect((await postChat(suite.gw, secret, hello)).status).toBe(200); // in its grace period

    const fresh = (await keysOf()).find((k) => k.name === 'page-made' && k.id !== keyId);
    const oldRow = keyRow(old.prefix);
    await oldRow.getByText(`replaced by ${fresh.prefix}`).waitFor();
    expect(await oldRow.textContent()).toMatch(/grace until \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/);
    expect(await oldRow.getByRole('button', { name: /^Rotate/ }).count()).toBe(0);
    keyId = fresh.id;
    secret = rotated;
  });

  it('revokes the key: marked revoked, and refused with 401', async () => {
    const [key] = (await keysOf()).filter((k) => k.id === keyId);
    await keyRow(key.prefix).getByRole('button', { name: /^Revoke/ }).click();
    expect(await dialog().textContent()).toContain('cannot be undone');
    await confirm('Revoke', page.locator('#keys-actions'), /^Revoked page-made/);
    await keyRow(key.prefix).getByText(/^revoked \d{4}-/).waitFor();
    expect(await keyRow(key.prefix).getByRole('button').count()).toBe(0);
    const deadline = Date.now() + 3000;
    let status = 0;
    while (Date.now() < deadline && (status = (await postChat(suite.gw, secret, hello)).status) !== 401) await new Promise((r) => setTimeout(r, 100));
    expect(status).toBe(401);
  });

  it("shows the API's error for an action on a key changed elsewhere (404: already revoked)", async () => {
    const other = (await suite.admin.request('POST', `/accounts/${accountId}/keys`, { name: 'revoked-elsewhere' })).body;
    await page.reload();
    await keyRow(other.prefix).waitFor();
    expect((await suite.admin.request('DELETE', `/keys/${other.id}`)).status).toBe(200);
    await keyRow(other.prefix).getByRole('button', { name: /^Rotate/ }).click();
    await dialog().getByRole('button', { name: 'Rotate', exact: true }).click();
    await page.locator('#keys-actions').getByRole('alert').getByText(`No key with id ${other.id} that is not revoked.`).waitFor();
  });

  it('lists the actions in the audit, by admin, newest first', async () => {
    await page.reload();
    const rows = page.locator('#audit tbody tr');
    await rows.first().waitFor();
    const shown = await rows.evaluateAll((trs) =>
      trs.map((tr: any) => ({ action: tr.dataset.action, actor: tr.querySelector('[data-col=actor]').textContent, details: tr.querySelector('[data-col=details]').textContent })),
    );
    // Oldest first, as done: the account's making through the API, then this page's actions (the refused ones left none).
    const done = [
      'account.create', 'account.credits', 'account.subscription', 'key.create',
      'key.create', 'key.update', 'key.update', 'account.credits', 'account.spending_limit', 'account.update', 'key.rotate', 'key.revoke',
      'key.create', 'key.revoke',
    ];
    expect(shown.map((r) => r.action)).toEqual(done.reverse());
    expect(new Set(shown.map((r) => r.actor))).toEqual(new Set(['admin']));
    expect(shown.find((r) => r.action === 'account.spending_limit')!.details).toBe('monthly_limit_usd: 20');
    expect(shown.filter((r) => r.action === 'account.credits').map((r) => r.details)).toEqual(['amount_usd: 1.234567', 'amount_usd: 5']);
    expect(shown.find((r) => r.action === 'key.rotate')!.details).toMatch(/^grace_s: 600, replaced page-made gwk_/);
  });

  it('shows a key at 40% of its monthly limit as 40%', async () => {
    const made = (await suite.admin.request('POST', `/accounts/${accountId}/keys`, { name: 'forty' })).body;
    expect((await postChat(suite.gw, made.key, hello)).status).toBe(200);
    let spend = 0n;
    for (const deadline = Date.now() + 5000; Date.now() < deadline && (spend === 0n || spend % 2n === 1n); ) {
      spend = micros((await keysOf()).find((k) => k.id === made.id).month_spend_usd);
      if (spend % 2n === 1n) expect((await postChat(suite.gw, made.key, hello)).status).toBe(200);
      else if (spend === 0n) await new Promise((r) => setTimeout(r, 100));
    }
    expect(spend > 0n && spend % 2n === 0n).toBe(true);
    const limit = (spend * 5n) / 2n;
    const limitUsd = `${limit / 1_000_000n}.${(limit % 1_000_000n).toString().padStart(6, '0')}`;
    expect((await suite.admin.request('PATCH', `/keys/${made.id}`, { monthly_limit_usd: limitUsd })).status).toBe(200);
    await page.reload();
    const cell = keyRow(made.prefix).locator('[data-col=limit]');
    await cell.waitFor();
    expect(await cell.textContent()).toContain('40%');
    expect(await cell.getByRole('meter').getAttribute('aria-valuenow')).toBe('40');
  });

  it('fits a phone: at 390 px each key is a card and the forms are one column', async () => {
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true });
    const small = await phone.newPage();
    await small.goto(`${suite.gw.url}/dashboard#${new URLSearchParams({ account: accountId })}`);
    await small.getByLabel('Admin token').fill(TEST_ADMIN_TOKEN);
    await small.getByRole('button', { name: 'Sign in' }).click();
    await small.locator('#keys tbody tr').first().waitFor();
    expect(await pageOverflow(small)).toBe(0);
    const layout = await small.evaluate(() => {
      const doc = (globalThis as any).document;
      const row = doc.querySelector('#keys tbody tr');
      const inputs = [...doc.querySelectorAll('#account-actions form')].map((f: any) => f.getBoundingClientRect());
      return {
        rowDisplay: (globalThis as any).getComputedStyle(row).display,
        theadHeight: doc.querySelector('#keys thead').getBoundingClientRect().height,
        formsStacked: inputs.every((box: any, i: number) => i === 0 || box.top >= inputs[i - 1].bottom),
        keysFit: doc.querySelector('#keys').getBoundingClientRect().right <= 390,
      };
    });
    expect(layout).toEqual({ rowDisplay: 'block', theadHeight: 0, formsStacked: true, keysFit: true });
    await screenshot(small, 'dashboard-manage-390.png');
    await phone.close();
  });

  it('passes axe-core with the editor, the confirmation and the secret open, at 1280 and 390 px', async () => {
    for (const width of [1280, 390]) {
      const checked = await browser.newContext({ viewport: { width, height: 900 }, bypassCSP: true });
      const p = await checked.newPage();
      await p.goto(`${suite.gw.url}/dashboard#${new URLSearchParams({ account: accountId })}`);
      await p.getByLabel('Admin token').fill(TEST_ADMIN_TOKEN);
      await p.getByRole('button', { name: 'Sign in' }).click();
      const row = p.locator('#keys tbody tr').filter({ has: p.getByRole('button', { name: /^Edit/ }) }).first();
      await row.waitFor();
      await p.locator('#audit tbody tr').first().waitFor();
      await row.getByRole('button', { name: /^Edit/ }).click();
      const findings: Record<string, unknown> = { editor: await axeFindings(p) };
      await p.getByRole('form', { name: /^Edit key/ }).getByLabel('Tokens per minute (tpm)').fill('777');
      await p.getByRole('button', { name: 'Save changes' }).click();
      await p.getByRole('dialog').waitFor();
      findings.confirmation = await axeFindings(p);
      await p.keyboard.press('Escape');
      await p.getByRole('form', { name: 'New key' }).getByLabel('Name').fill(`axe ${width}`);
      await p.getByRole('button', { name: 'Create key' }).click();
      await p.getByRole('dialog').getByRole('button', { name: 'Create', exact: true }).click();
      await p.getByRole('dialog', { name: /New key axe/ }).waitFor();
      findings.secret = await axeFindings(p);
      await p.keyboard.press('Escape');
      await p.getByRole('dialog').waitFor({ state: 'hidden' });
      expect(await p.locator('#secret-value').textContent()).toBe('');
      expect({ width, ...findings }).toEqual({ width, editor: [], confirmation: [], secret: [] });
      if (width === 1280) await screenshot(p, 'dashboard-manage-1280.png');
      await checked.close();
    }
  });
});
