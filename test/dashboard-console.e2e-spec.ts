import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Browser, BrowserContext, Page, Route } from 'playwright-core';
import { AdminClient } from './support/admin-client';
import { axeFindings } from './support/axe';
import { postChat, sdk } from './support/chat-support';
import { launchChromium, pageOverflow, screenshot } from './support/dashboard-browser';
import { startTestApp, TEST_ADMIN_TOKEN, TestApp } from './support/test-app';

/**
 * The screenshots docs/operations.md shows (committed): this test takes them into test-output/ on every run, and
 * copies them over the docs' own with DOCS_SCREENSHOTS=1 (docs/operations.md, "Dashboard").
 */
const DOCS_IMAGES = join(__dirname, '..', 'docs', 'images');
const toDocs = (name: string) => {
  if (process.env.DOCS_SCREENSHOTS === '1') copyFileSync(join(__dirname, '..', 'test-output', name), join(DOCS_IMAGES, name));
};

const month = () => new Date().toISOString().slice(0, 7);

async function signIn(context: BrowserContext, url: string, hash = ''): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${url}/dashboard${hash}`);
  await page.getByLabel('Admin token').fill(TEST_ADMIN_TOKEN);
  await page.getByRole('button', { name: 'Sign in' }).click();
  return page;
}

/** Waits until the view for `what` (`<account id>` or `overview`, and a period label) has settled, every panel loaded or failed. */
async function settled(page: Page, what: string, label = month()): Promise<void> {
  await page.waitForFunction((want) => (globalThis as any).document.body.dataset.loaded === want, `${what}/${label}`);
}

/** A route held until the test lets it go, then answered as `answer` says. */
function heldRoute(page: Page, pattern: string | RegExp) {
  let release!: (answer: 'continue' | 'fail') => void;
  const decided = new Promise<'continue' | 'fail'>((resolve) => (release = resolve));
  const seen = new Promise<void>((resolve) => {
    void page.route(pattern, async (route: Route) => {
      resolve();
      const answer = await decided;
      if (answer === 'continue') await route.continue();
      else await route.fulfill({ status: 500, contentType: 'application/json', body: JSON.stringify({ error: { message: 'Internal error (test).', type: 'server_error', code: 'internal_error' } }) });
    });
  });
  return { seen, release };
}

describe('dashboard as an operator console (browser)', () => {
  let gw: TestApp;
  let admin: AdminClient;
  let browser: Browser;
  let first: { accountId: string; key: string };
  let second: { accountId: string; key: string };
  let poor: { accountId: string; key: string };
  let limitUsd: string;
  let spendMicros: bigint;

  beforeAll(async () => {
    gw = await startTestApp();
    admin = new AdminClient(gw.url);
    browser = await launchChromium();
    first = await admin.createAccount({ name: 'Console first', creditsUsd: '3' });
    second = await admin.createAccount({ name: 'Console second', creditsUsd: '2' });
    poor = await admin.createAccount({ name: 'Console poor', creditsUsd: '0.001' });
    for (let i = 0; i < 4; i++) await sdk(gw, first.key).chat.completions.create({ model: 'dev-echo', messages: [{ role: 'user', content: `first account, request ${i}, a few words more` }] });
    for (let i = 0; i < 2; i++) await sdk(gw, second.key).chat.completions.create({ model: 'dev-echo', messages: [{ role: 'user', content: `second ${i}` }] });
    // The poor account: one request it can afford, then holds that do not fit (402).
    await sdk(gw, poor.key).chat.completions.create({ model: 'dev-echo', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
    for (let i = 0; i < 3; i++) {
      expect((await postChat(gw, poor.key, { model: 'dev-echo', messages: [{ role: 'user', content: 'x' }], max_tokens: 4000 })).status).toBe(402);
    }
    // The first account at 69% of its monthly limit: the limit set from what it spent.
    const account = await admin.account(first.accountId);
    spendMicros = BigInt(account.month_spend_usd.replace('.', ''));
    const limitMicros = (spendMicros * 100n) / 69n;
    limitUsd = `${limitMicros / 1_000_000n}.${String(limitMicros % 1_000_000n).padStart(6, '0')}`;
    await admin.request('PUT', `/accounts/${first.accountId}/spending-limit`, { monthly_limit_usd: limitUsd });
    // The second one near its limit (90%), for the overview's list and the docs' screenshots.
    const spentBySecond = BigInt((await admin.account(second.accountId)).month_spend_usd.replace('.', ''));
    const secondLimit = (spentBySecond * 10n) / 9n;
    await admin.request('PUT', `/accounts/${second.accountId}/spending-limit`, {
      monthly_limit_usd: `${secondLimit / 1_000_000n}.${String(secondLimit % 1_000_000n).padStart(6, '0')}`,
    });
  });
  afterAll(async () => {
    await browser?.close();
    await gw?.close();
  });

  it('never shows the previous account’s figures while the next one loads, or when its load fails, and says which panel failed', async () => {
    const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
    const page = await signIn(context, gw.url, `#account=${first.accountId}`);
    await settled(page, first.accountId);
    expect(await page.getByRole('region', { name: /^Totals/ }).locator('#totals').isVisible()).toBe(true);
    const firstTotals = await page.locator('#totals').innerText();

    // The second account's usage is slow: while it loads, the first account's totals are not on screen.
    const slow = heldRoute(page, new RegExp(`/admin/v1/accounts/${second.accountId}/usage`));
    await page.getByRole('combobox', { name: 'Account', exact: true }).selectOption(second.accountId);
    await slow.seen;
    expect(await page.locator('#totals').isVisible()).toBe(false);
    expect(await page.getByRole('heading', { level: 2, name: /^Totals/ }).textContent()).toContain('Console second');
    expect(await page.getByRole('heading', { level: 2, name: /Console second/ }).first().isVisible()).toBe(true);
    // Its account panel (another request) shows the second account already; the chart and tables wait, hidden.
    await page.waitForFunction(() => (globalThis as any).document.querySelector('[data-panel=account]').getAttribute('aria-busy') === 'false');
    expect(await page.locator('#account-facts').textContent()).toContain(second.accountId);
    for (const panel of ['totals', 'chart', 'by-key', 'by-model', 'latest']) {
      expect({ panel, visible: await page.locator(`[data-panel="${panel}"] .panel-body`).isVisible() }).toEqual({ panel, visible: false });
    }

    // It fails: an error in the panels that needed it, announced; the others show the second account.
    slow.release('fail');
    await settled(page, second.accountId);
    const alert = page.locator('[data-panel="totals"] [role=alert]');
    expect(await alert.textContent()).toMatch(/Could not load this for Console second, .*Internal error \(test\)/);
    expect(await page.locator('#totals').isVisible()).toBe(false);
    expect(await page.locator('body').innerText()).not.toContain(firstTotals!.slice(0, 40));
    expect(firstTotals).not.toBe('');
    expect(await page.locator('#account-facts').isVisible()).toBe(true);
    expect(await page.getByRole('status').first().textContent()).toMatch(/panels? could not load/);
    await page.unroute(new RegExp(`/admin/v1/accounts/${second.accountId}/usage`));

    // A slow answer for an account left behind is dropped when it arrives: the screen keeps the account chosen after.
    const late = heldRoute(page, new RegExp(`/admin/v1/accounts/${first.accountId}/usage`));
    await page.getByRole('combobox', { name: 'Account', exact: true }).selectOption(first.accountId);
    await late.seen;
    await page.getByRole('combobox', { name: 'Account', exact: true }).selectOption(second.accountId);
    await settled(page, second.accountId);
    const secondTotals = await page.locator('#totals').textContent();
    late.release('continue');
    await page.waitForTimeout(300);
    expect(await page.locator('#totals').textContent()).toBe(secondTotals);
    expect(await page.getByRole('heading', { level: 2, name: /^Totals/ }).textContent()).toContain('Console second');
    await context.close();
  });

  it('shows headroom: 69% of the monthly limit, low credits, and why requests were refused with 402', async () => {
    const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
    const page = await signIn(context, gw.url, `#account=${first.accountId}`);
    await settled(page, first.accountId);
    const limit = page.getByRole('meter', { name: 'Monthly limit' });
    const pct = Number((spendMicros * 100n) / BigInt(limitUsd.replace('.', '')));
    expect(pct).toBe(69);
    expect(await limit.getAttribute('aria-valuenow')).toBe('69');
    expect(await page.locator('.headroom').textContent()).toContain(`69% $${(await admin.account(first.accountId)).month_spend_usd} of $${limitUsd} spent this month`);
    expect(await page.locator('.headroom .warning').count()).toBe(0);

    await page.getByRole('combobox', { name: 'Account', exact: true }).selectOption(poor.accountId);
    await settled(page, poor.accountId);
    expect(await page.locator('.headroom .warning').textContent()).toMatch(/^Low credits: \$0\.\d{6} available, under \$1\.000000/);
    const refusals = page.locator('#refusals');
    expect(await refusals.textContent()).toMatch(/Refused for money \(402\): 3 × insufficient_credits\. Before a chat request runs, the gateway holds/);
    // Token classes this account never used are left out of the totals.
    const totals = await page.locator('#totals').textContent();
    expect(totals).toContain('Prompt tokens');
    expect(totals).not.toContain('Cached prompt tokens');
    expect(totals).not.toContain('Audio seconds');
    // Days still to come are not drawn as zero days.
    const tomorrow = new Date(Date.now() + 86400000).toISOString().slice(0, 10);
    const today = new Date().toISOString().slice(0, 10);
    expect(await page.locator(`#daily-chart rect[data-day="${today}"]`).count()).toBe(1);
    if (tomorrow.startsWith(month())) expect(await page.locator(`#daily-chart rect[data-day="${tomorrow}"]`).count()).toBe(0);
    await context.close();
  });

  it('takes a date range as well as a month, and keeps it in the address', async () => {
    const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
    const page = await signIn(context, gw.url, `#account=${second.accountId}`);
    await settled(page, second.accountId);
    const today = new Date().toISOString().slice(0, 10);
    const weekAgo = new Date(Date.now() - 6 * 86400000).toISOString().slice(0, 10);
    await page.getByLabel('From (UTC)').fill(weekAgo);
    await page.getByLabel('From (UTC)').dispatchEvent('change');
    await settled(page, second.accountId, `${weekAgo} to ${month()}-${String(new Date(Date.UTC(+month().slice(0, 4), +month().slice(5), 0)).getUTCDate())}`);
    await page.getByLabel('To (UTC, included)').fill(today);
    await page.getByLabel('To (UTC, included)').dispatchEvent('change');
    await settled(page, second.accountId, `${weekAgo} to ${today}`);
    expect(new URLSearchParams((await page.evaluate(() => (globalThis as any).location.hash)).slice(1)).get('from')).toBe(weekAgo);
    expect(await page.locator('#daily-chart rect').count()).toBe(7);
    expect(await page.getByRole('heading', { level: 2, name: /^Totals/ }).textContent()).toContain(`${weekAgo} to ${today}`);
    expect(await page.locator('#totals').textContent()).toContain('Requests2');
    await context.close();
  });

  it('passes axe-core on every view, works from the keyboard, fits a 390 px phone, and saves the screenshots of the docs', async () => {
    mkdirSync(DOCS_IMAGES, { recursive: true });
    for (const width of [1440, 390]) {
      const context = await browser.newContext({ viewport: { width, height: 900 }, bypassCSP: true });
      const page = await context.newPage();
      await page.goto(`${gw.url}/dashboard`);
      expect({ width, view: 'sign-in', findings: await axeFindings(page) }).toEqual({ width, view: 'sign-in', findings: [] });

      // Keyboard: the page opens with the token field focused; the skip link is the one stop before it, and leads to
      // the content, where the next Tab is the token field again; Enter signs in.
      const focused = () => page.evaluate(() => (globalThis as any).document.activeElement.id || (globalThis as any).document.activeElement.textContent);
      expect(await focused()).toBe('admin-token');
      await page.keyboard.press('Shift+Tab');
      expect(await focused()).toBe('Skip to the content');
      await page.keyboard.press('Enter');
      await page.keyboard.press('Tab');
      expect(await focused()).toBe('admin-token');
      await page.keyboard.type(TEST_ADMIN_TOKEN);
      await page.keyboard.press('Enter');
      await settled(page, 'overview');
      expect({ width, view: 'overview', findings: await axeFindings(page) }).toEqual({ width, view: 'overview', findings: [] });
      expect(await pageOverflow(page)).toBe(0);
      await screenshot(page, `console-overview-${width}.png`);
      toDocs(`console-overview-${width}.png`);

      await page.getByRole('combobox', { name: 'Account', exact: true }).selectOption(first.accountId);
      await settled(page, first.accountId);
      expect({ width, view: 'report', findings: await axeFindings(page) }).toEqual({ width, view: 'report', findings: [] });
      expect(await pageOverflow(page)).toBe(0);
      await screenshot(page, `console-report-${width}.png`);
      toDocs(`console-report-${width}.png`);

      if (width === 390) {
        // Filters stacked: each as wide as the screen allows (the search box reads its placeholder, not "na").
        for (const label of ['Find an account', 'Account']) {
          const box = (await page.getByRole(label === 'Account' ? 'combobox' : 'searchbox', { name: label, exact: true }).boundingBox())!;
          expect({ label, wide: box.width >= 300, inside: box.x >= 0 && box.x + box.width <= 390 }).toEqual({ label, wide: true, inside: true });
        }
        // The chart's day labels are drawn at a legible size (not ~4 px).
        const heights = await page.$$eval('#daily-chart text', (texts) => texts.map((t: any) => t.getBoundingClientRect().height));
        expect(Math.min(...heights)).toBeGreaterThanOrEqual(10);
      }
      await context.close();
    }
  });
});
