import { Client } from 'pg';
import { Browser, BrowserContext, Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { axeFindings } from './support/axe';
import { launchChromium, pageOverflow, screenshot } from './support/dashboard-browser';
import { GatewaySuite, moneyOf, postChat, usd, waitForUsageRows } from './support/chat-support';
import { startTestApp, TEST_ADMIN_TOKEN, testDatabaseUrl } from './support/test-app';

interface OverviewRow {
  id: string;
  name: string;
  requests: number;
  failed: number;
  error_rate: number;
  cost_usd: string;
  credits_usd: string;
  reserved_usd: string;
  month_spend_usd: string;
  monthly_limit_usd: string | null;
  limit_used: number | null;
  low_credits_usd: string | null;
  payment_refusals: number;
}

interface Overview {
  object: 'overview';
  from: string;
  to: string;
  month: string;
  totals: Record<string, number | string>;
  top_spenders: OverviewRow[];
  near_limit: OverviewRow[];
  low_credits: OverviewRow[];
  highest_error_rate: OverviewRow[];
}

/** What an operator's account looks like here: its id and key, and what was sent with it. */
interface Made {
  id: string;
  key: string;
  name: string;
  ok: number;
  failed: number;
  refused: number;
}

const micros = (usdText: string) => BigInt(usdText.replace('.', ''));

/**
 * The all-accounts overview (issue 48, Build item 2; DESIGN.md 12.5): one answer over every account, its lists as the
 * ledger and the usage records say. The gateway runs on a database of its own, so that every account in it is one of
 * this file's and each list can be checked whole, members and order.
 */
describe('dashboard overview of all accounts', () => {
  const suite = {} as GatewaySuite;
  const dbName = `overview_${Date.now()}_${process.pid}`;
  let server: Client;
  const startedAt = new Date(Date.now() - 1000).toISOString();
  const made: Record<'big' | 'at85' | 'at69' | 'low' | 'failing' | 'idle', Made> = {} as never;

  const get = (query: string, token: string | null = TEST_ADMIN_TOKEN) =>
    fetch(`${suite.gw.url}/dashboard/api/overview${query}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const overview = async (query = `?from=${encodeURIComponent(startedAt)}`): Promise<Overview> => {
    const res = await get(query);
    expect(res.status).toBe(200);
    return (await res.json()) as Overview;
  };
  const names = (rows: OverviewRow[]) => rows.map((r) => r.name);

  /** `ok` dev-echo answers of a sizeable prompt, `failed` unknown-model 400s, `refused` 402s (no room for max_tokens). */
  async function make(name: string, opts: { credits?: string; ok: number; failed?: number; refused?: number; lowCredits?: string }): Promise<Made> {
    const { admin, gw } = suite;
    const account = await admin.createAccount({ name, creditsUsd: opts.credits });
    if (opts.lowCredits) expect((await admin.request('PATCH', `/accounts/${account.accountId}`, { low_credits_usd: opts.lowCredits })).status).toBe(200);
    const prompt = 'The operator reads the overview first. '.repeat(40);
    for (let i = 0; i < opts.ok; i++) {
      const res = await postChat(gw, account.key, { model: 'dev-echo', max_tokens: 64, messages: [{ role: 'user', content: `${i} ${prompt}` }] });
      expect(res.status).toBe(200);
    }
    for (let i = 0; i < (opts.failed ?? 0); i++) {
      expect((await postChat(gw, account.key, { model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] })).status).toBe(400);
    }
    for (let i = 0; i < (opts.refused ?? 0); i++) {
      const res = await postChat(gw, account.key, { model: 'dev-echo', max_tokens: 4096, messages: [{ role: 'user', content: prompt }] });
      expect(res.status).toBe(402);
    }
    const total = opts.ok + (opts.failed ?? 0) + (opts.refused ?? 0);
    if (total > 0) await waitForUsageRows(suite.db, account.accountId, total);
    await moneyOf(suite.db, account.accountId);
    return { id: account.accountId, key: account.key, name, ok: opts.ok, failed: opts.failed ?? 0, refused: opts.refused ?? 0 };
  }

  /** Sets the account's monthly limit to its month spend × 100 / percent, rounded down: at `percent`% or a hair above. */
  async function limitAt(account: Made, percent: bigint): Promise<{ spend: bigint; limit: bigint }> {
    const spend = micros((await suite.admin.account(account.id)).month_spend_usd);
    const limit = (spend * 100n) / percent;
    const res = await suite.admin.request('PUT', `/accounts/${account.id}/spending-limit`, { monthly_limit_usd: usd(limit) });
    expect(res.status).toBe(200);
    return { spend, limit };
  }

  beforeAll(async () => {
    server = new Client({ connectionString: testDatabaseUrl() });
    await server.connect();
    await server.query(`CREATE DATABASE "${dbName}"`);
    const url = new URL(testDatabaseUrl());
    url.pathname = `/${dbName}`;
    suite.gw = await startTestApp({ env: { databaseUrl: url.toString() } });
    suite.admin = new AdminClient(suite.gw.url);
    suite.db = suite.gw.app.get(DataSource);

    made.big = await make('Big spender', { credits: '10', ok: 6 });
    made.at85 = await make('At 85', { credits: '10', ok: 3 });
    made.at69 = await make('At 69', { credits: '10', ok: 2 });
    // $0.005: room for a 64-token answer, none for 4096 (a 402), and under its own $0.01 threshold.
    made.low = await make('Low credits', { credits: '0.005', ok: 2, refused: 3, lowCredits: '0.01' });
    // Under $1 without a threshold of its own, and in use: low by the default rule.
    made.failing = await make('Failing', { credits: '0.5', ok: 1, failed: 3 });
    // Never funded nor used: not news.
    made.idle = await make('Idle', { ok: 0 });
    await limitAt(made.big, 100n);
    await limitAt(made.at85, 85n);
    await limitAt(made.at69, 69n);
  });
  afterAll(async () => {
    await suite.gw?.close();
    await server?.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
    await server?.end();
  });

  it('gives each account the figures of the ledger and of its usage records', async () => {
    const answer = await overview();
    expect(answer).toMatchObject({ object: 'overview', from: startedAt, month: new Date().toISOString().slice(0, 7) });
    const seen = new Map<string, OverviewRow>();
    for (const row of [...answer.top_spenders, ...answer.near_limit, ...answer.low_credits, ...answer.highest_error_rate]) {
      if (seen.has(row.id)) expect(row).toEqual(seen.get(row.id));
      seen.set(row.id, row);
    }
    for (const account of Object.values(made).filter((a) => a.ok + a.failed + a.refused > 0)) {
      const row = seen.get(account.id)!;
      expect(row).toBeDefined();
      const money = await moneyOf(suite.db, account.id);
      const charged = money.charges.reduce((sum, c) => sum + c.amount, 0n);
      const [limit] = await suite.db.query(`SELECT monthly_limit_micros, low_credits_micros FROM accounts WHERE id = $1`, [account.id]);
      const requests = account.ok + account.failed + account.refused;
      expect(row).toEqual({
        id: account.id,
        name: account.name,
        requests,
        failed: account.failed + account.refused,
        error_rate: Math.round(((account.failed + account.refused) / requests) * 10_000) / 10_000,
        cost_usd: usd(charged),
        credits_usd: usd(money.ledgerSum),
        reserved_usd: '0.000000',
        month_spend_usd: usd(charged),
        monthly_limit_usd: limit.monthly_limit_micros === null ? null : usd(BigInt(limit.monthly_limit_micros)),
        limit_used: limit.monthly_limit_micros === null ? null : expect.closeTo(Number(charged) / Number(limit.monthly_limit_micros), 4),
        low_credits_usd: limit.low_credits_micros === null ? null : usd(BigInt(limit.low_credits_micros)),
        payment_refusals: account.refused,
      });
      expect(charged).toBeGreaterThan(0n);
    }
    const all = Object.values(made);
    const cost = (await Promise.all(all.map((a) => moneyOf(suite.db, a.id)))).reduce((sum, m) => sum + m.charges.reduce((s, c) => s + c.amount, 0n), 0n);
    expect(answer.totals).toEqual({
      accounts: 6,
      active_accounts: 5,
      requests: all.reduce((n, a) => n + a.ok + a.failed + a.refused, 0),
      failed: all.reduce((n, a) => n + a.failed + a.refused, 0),
      payment_refusals: made.low.refused,
      cost_usd: usd(cost),
      near_limit: 2,
      low_credits: 2,
    });
  });

  it('ranks the top spenders of the period by cost', async () => {
    const answer = await overview();
    const costs = await Promise.all(
      Object.values(made).map(async (a) => ({ ...a, cost: (await moneyOf(suite.db, a.id)).charges.reduce((s, c) => s + c.amount, 0n) })),
    );
    // Highest cost first; equal costs (At 69 and Low credits: two like answers each) by more requests, then by name.
    const requests = (a: Made) => a.ok + a.failed + a.refused;
    const expected = costs
      .filter((c) => c.cost > 0n)
      .sort((a, b) => (a.cost !== b.cost ? (a.cost > b.cost ? -1 : 1) : requests(b) - requests(a) || a.name.localeCompare(b.name)))
      .map((c) => c.name);
    expect(names(answer.top_spenders)).toEqual(expected);
    expect(expected[0]).toBe('Big spender');
  });

  it('lists the accounts at 80% of their monthly limit or more, highest first: 100% and 85%, not 69%', async () => {
    const answer = await overview();
    expect(names(answer.near_limit)).toEqual(['Big spender', 'At 85']);
    const byName = (name: string) => answer.near_limit.find((r) => r.name === name)!;
    expect(byName('Big spender').limit_used).toBe(1);
    expect(byName('At 85').limit_used).toBeGreaterThanOrEqual(0.85);
    expect(byName('At 85').limit_used).toBeLessThan(0.86);
    // Every row meets the rule, and the list runs from the most used down.
    for (const row of answer.near_limit) expect(micros(row.month_spend_usd) * 5n).toBeGreaterThanOrEqual(micros(row.monthly_limit_usd!) * 4n);
    const used = answer.near_limit.map((r) => r.limit_used!);
    expect(used).toEqual([...used].sort((a, b) => b - a));
    // The 69% account is in the overview's figures all the same (a top spender), only not flagged.
    expect(answer.top_spenders.find((r) => r.id === made.at69.id)?.limit_used).toBeCloseTo(0.69, 2);
  });

  it('lists the accounts low on credits: at or under their own threshold, or $1 while in use; lowest first', async () => {
    const answer = await overview();
    expect(names(answer.low_credits)).toEqual(['Low credits', 'Failing']);
    const low = answer.low_credits.find((r) => r.id === made.low.id)!;
    expect(micros(low.credits_usd)).toBeLessThanOrEqual(micros(low.low_credits_usd!));
    const available = answer.low_credits.map((r) => micros(r.credits_usd) - micros(r.reserved_usd));
    expect(available).toEqual([...available].sort((a, b) => (a === b ? 0 : a < b ? -1 : 1)));
    for (const row of answer.low_credits) {
      const avail = micros(row.credits_usd) - micros(row.reserved_usd);
      if (row.low_credits_usd === null) expect(avail).toBeLessThanOrEqual(1_000_000n);
      else expect(avail).toBeLessThanOrEqual(micros(row.low_credits_usd));
    }
    // An account that has never been funded nor used is in no list.
    expect(JSON.stringify(answer)).not.toContain(made.idle.id);
  });

  it('ranks the highest error rates among accounts with a failure, with their 402s', async () => {
    const answer = await overview();
    // Failing: 3 of 4 failed; Low credits: 3 of 5 (all 402).
    expect(names(answer.highest_error_rate)).toEqual(['Failing', 'Low credits']);
    expect(answer.highest_error_rate.map((r) => [r.error_rate, r.payment_refusals])).toEqual([
      [0.75, 0],
      [0.6, 3],
    ]);
  });

  it('narrows the period figures to the period asked, and keeps the month figures', async () => {
    const later = new Date(Date.now() + 60_000).toISOString();
    const answer = await overview(`?from=${encodeURIComponent(later)}&to=${encodeURIComponent(new Date(Date.now() + 120_000).toISOString())}`);
    expect(answer).toMatchObject({ from: later, top_spenders: [], highest_error_rate: [] });
    expect(answer.totals).toMatchObject({ active_accounts: 0, requests: 0, failed: 0, payment_refusals: 0, cost_usd: '0.000000' });
    // Near a limit is this month's spend: the same whatever the period. Low credits (in use this month) too.
    expect(names(answer.near_limit)).toEqual(['Big spender', 'At 85']);
    expect(names(answer.low_credits)).toEqual(['Low credits', 'Failing']);
    expect(answer.near_limit.find((r) => r.id === made.at85.id)).toMatchObject({ requests: 0, cost_usd: '0.000000' });
    // The default period is this UTC month so far.
    const month = await overview('');
    expect(month.from).toBe(`${new Date().toISOString().slice(0, 7)}-01T00:00:00.000Z`);
    expect(names(month.top_spenders)).toEqual(names((await overview()).top_spenders));
    // The widest period the date format allows reads the same requests.
    const always = await overview('?from=0001-01-01&to=9999-12-31');
    expect(always.top_spenders).toEqual(month.top_spenders);
    expect(always.totals).toEqual(month.totals);
  });

  it.each([
    ['a from that is not a date', '?from=yesterday', 'from'],
    ['an impossible date', '?from=2026-02-30', 'from'],
    ['a to that is not a date', '?to=2026-13-01', 'to'],
    ['a to before from', '?from=2026-03-02&to=2026-03-01', 'to'],
    ['an unknown parameter', '?account=x', 'account'],
  ])('refuses %s with 400 naming the parameter', async (_label, query, param) => {
    const res = await get(query);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 'invalid_request_error', param, message: expect.any(String) } });
  });

  it('answers 401 without the admin token, or with a wrong one, and shows nothing', async () => {
    for (const token of [null, 'not-the-admin-token', made.big.key]) {
      const res = await get('', token);
      expect(res.status).toBe(401);
      const body = await res.text();
      expect(JSON.parse(body).error).toMatchObject({ code: 'invalid_admin_token', message: expect.any(String) });
      expect(body).not.toContain('Big spender');
    }
  });

  describe('in the browser', () => {
    let browser: Browser;
    const month = new Date().toISOString().slice(0, 7);
    beforeAll(async () => {
      browser = await launchChromium();
    });
    afterAll(() => browser?.close());

    /** Signs in at /dashboard (no account asked for) and waits for the landing view to load. */
    async function signIn(context: BrowserContext): Promise<Page> {
      const page = await context.newPage();
      await page.goto(`${suite.gw.url}/dashboard`);
      await page.getByLabel('Admin token').fill(TEST_ADMIN_TOKEN);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForFunction((want) => (globalThis as any).document.body.dataset.loaded === want, `overview/${month}`);
      return page;
    }

    const TABLES = {
      top_spenders: /highest cost/,
      near_limit: /80% or more of their monthly limit/,
      low_credits: /low-credits alert/,
      highest_error_rate: /share of failed requests/,
    } as const;

    it('lands on the overview after sign-in, listing the accounts as the API does; a name opens its report', async () => {
      // bypassCSP: for axe-core's script only (test/support/axe.ts); the page's own CSP is tested in dashboard.e2e-spec.ts.
      const context = await browser.newContext({ viewport: { width: 1280, height: 1000 }, bypassCSP: true });
      const page = await signIn(context);
      await expect(page.getByRole('heading', { level: 2, name: /^Overview/ }).isVisible()).resolves.toBe(true);
      expect(await page.locator('#report').isHidden()).toBe(true);

      // The month on screen, as the page asks it.
      const [year, m] = month.split('-').map(Number);
      const answer = await overview(`?from=${month}-01&to=${new Date(Date.UTC(year, m, 0)).toISOString().slice(0, 10)}`);
      for (const [list, caption] of Object.entries(TABLES) as [keyof typeof TABLES, RegExp][]) {
        const table = page.getByRole('table', { name: caption });
        const ids = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr: any) => tr.dataset.accountId));
        expect({ list, ids }).toEqual({ list, ids: answer[list].map((r) => r.id) });
        expect(answer[list].length).toBeGreaterThan(0);
      }
      const totals = await page.locator('#overview-totals').textContent();
      expect(totals).toContain(`Cost (USD)${answer.totals.cost_usd}`);
      expect(totals).toContain(`Requests${answer.totals.requests}`);

      // Headroom in words beside each bar: the 85% account's share of its limit.
      const at85 = answer.near_limit.find((r) => r.id === made.at85.id)!;
      const nearLimit = page.getByRole('table', { name: TABLES.near_limit });
      await expect(nearLimit.getByRole('row', { name: /At 85/ }).textContent()).resolves.toContain(`85% of $${at85.monthly_limit_usd}`);
      await expect(nearLimit.getByRole('row', { name: /Big spender/ }).textContent()).resolves.toContain(`100% of $`);
      // The low-credits account's own alert, and the default one of an account without.
      const lowCredits = page.getByRole('table', { name: TABLES.low_credits });
      await expect(lowCredits.getByRole('row', { name: /Low credits/ }).textContent()).resolves.toContain('0.010000');
      await expect(lowCredits.getByRole('row', { name: /Failing/ }).textContent()).resolves.toContain('1.000000 (default)');
      await screenshot(page, 'dashboard-overview.png');
      expect(await axeFindings(page)).toEqual([]);

      await nearLimit.getByRole('link', { name: 'At 85' }).click();
      await page.waitForFunction((want) => (globalThis as any).document.body.dataset.loaded === want, `${made.at85.id}/${month}`);
      await expect(page.getByRole('heading', { level: 2, name: `At 85, ${month}`, exact: true }).isVisible()).resolves.toBe(true);
      expect(await page.locator('#overview').isHidden()).toBe(true);
      // Back is the overview again.
      await page.goBack();
      await page.waitForFunction((want) => (globalThis as any).document.body.dataset.loaded === want, `overview/${month}`);

      // A date range as well as a month: from today to the month's end (the whole month on its first day), then a month
      // with no requests, whose flags of this month stay.
      const today = new Date().toISOString().slice(0, 10);
      const lastDay = new Date(Date.UTC(year, m, 0)).toISOString().slice(0, 10);
      await page.getByLabel('From (UTC)').fill(today);
      await page.getByLabel('From (UTC)').dispatchEvent('change');
      const label = today === `${month}-01` ? month : `${today} to ${lastDay}`;
      await page.waitForFunction((want) => (globalThis as any).document.body.dataset.loaded === want, `overview/${label}`);
      const range = await overview(`?from=${today}&to=${lastDay}`);
      const spenders = page.getByRole('table', { name: TABLES.top_spenders });
      expect(await spenders.locator('tbody tr').evaluateAll((trs) => trs.map((tr: any) => tr.dataset.accountId))).toEqual(range.top_spenders.map((r) => r.id));
      await expect(spenders.getByRole('link', { name: 'Big spender' }).getAttribute('href')).resolves.toBe(`#account=${made.big.id}&from=${today}&to=${lastDay}`);
      await page.goto(`${suite.gw.url}/dashboard#month=2020-01`);
      await page.waitForFunction(() => (globalThis as any).document.body.dataset.loaded === 'overview/2020-01');
      await expect(spenders.locator('tbody').textContent()).resolves.toBe('No account has spent anything in this period.');
      await expect(page.getByRole('table', { name: TABLES.near_limit }).getByRole('link').allTextContents()).resolves.toEqual(['Big spender', 'At 85']);
      await context.close();
    });

    it('fits a phone: 390 px wide, no sideways scroll, every account a card with its figures', async () => {
      const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, bypassCSP: true });
      const page = await signIn(context);
      expect(await pageOverflow(page)).toBe(0);
      const row = page.getByRole('table', { name: TABLES.near_limit }).getByRole('row', { name: /At 85/ });
      const box = (await row.boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(390);
      // Each figure's column heading is shown beside it on a phone.
      const label = await row.locator('td').nth(2).evaluate((td) => (globalThis as any).getComputedStyle(td, '::before').content);
      expect(label).toContain('Spent this month (USD)');
      await screenshot(page, 'dashboard-overview-390.png');
      expect(await axeFindings(page)).toEqual([]);
      await context.close();
    });
  });
});
