import { readFileSync } from 'node:fs';
import { Browser, Page } from 'playwright-core';
import { postChat, sdk, useGatewayWithFake, waitForUsageRows, withFakeProvider } from './support/chat-support';
import { FakeUpstream } from './support/fake-upstream';
import { axisTicks, launchChromium, openReport, pageOverflow, screenshot, tableFits } from './support/dashboard-browser';
import { TEST_ADMIN_TOKEN } from './support/test-app';

const FAKE = { id: 'fake-chat', input: 1, output: 2, maxOutput: 1000 };
const BROKEN = { id: 'fake-broken', input: 1, output: 2, maxOutput: 1000 };
const PAGE_SIZE = 50;

interface StatusCount {
  endpoint: string;
  status: number;
  error_code: string | null;
  requests: number;
}

/**
 * The dashboard answers an operator's questions (issue 17, item 5), against data made through the admin
 * API and the gateway: two keys (one revoked afterwards), successes and failures on two endpoints, more
 * requests than one page of "Latest requests".
 */
describe('dashboard for operators (browser)', () => {
  // FAKE prices OpenAI's priority tier (docs/configuration.md, "Price variants and server-tool fees").
  const suite = useGatewayWithFake((url) => (raw) => {
    withFakeProvider(url, [FAKE, BROKEN])(raw);
    raw.catalog.find((m: { id: string }) => m.id === FAKE.id).price_variants = [{ when: { service_tier: ['priority', 'fast'] }, multiplier: 2 }];
  });
  let browser: Browser;
  let accountId: string;
  let liveKeyId: string;
  let revokedKeyId: string;
  let revokedAt: string;
  let sdkRequestId: string;
  let rowsNewestFirst: { request_id: string; key_id: string; status: number; error_code: string | null }[];

  beforeAll(async () => {
    browser = await launchChromium();
    const { fake, gw, admin, db } = suite;
    fake.failureByModel[`upstream-${BROKEN.id}`] = 'status500';
    const live = await admin.createAccount({ name: 'Operator view', creditsUsd: '5', subscription: 'active' });
    accountId = live.accountId;
    liveKeyId = live.keyId;
    const other = (await admin.request('POST', `/accounts/${accountId}/keys`, { name: 'soon-revoked' })).body;
    revokedKeyId = other.id;

    // Successes through the official SDK; the first one's x-request-id is what a client (and the log) sees.
    const first = await sdk(gw, live.key).chat.completions.create({ model: FAKE.id, messages: [{ role: 'user', content: 'hello' }] }).withResponse();
    sdkRequestId = first.response.headers.get('x-request-id')!;
    for (let i = 0; i < 45; i++) await sdk(gw, live.key).chat.completions.create({ model: 'dev-echo', messages: [{ role: 'user', content: `n ${i}` }] });
    // Failures: unknown model (400), invalid request (400), upstream failure (502), and on speech a bad voice (400).
    for (let i = 0; i < 3; i++) expect((await postChat(gw, other.key, { model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] })).status).toBe(400);
    expect((await postChat(gw, other.key, { model: FAKE.id })).status).toBe(400);
    for (let i = 0; i < 2; i++) {
      await expect(sdk(gw, live.key).chat.completions.create({ model: BROKEN.id, messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status: 502 });
    }
    // These three report token classes (issue 23): 8 of their 12 prompt tokens cached, 2 of 5 reasoning, 1 audio; at
    // the priority tier (issue 45).
    fake.reply = { ...FakeUpstream.defaultReply(), usageDetails: { prompt: { cached_tokens: 8 }, completion: { reasoning_tokens: 2, audio_tokens: 1 } } };
    for (let i = 0; i < 3; i++) {
      await sdk(gw, other.key).chat.completions.create({ model: FAKE.id, messages: [{ role: 'user', content: 'y'.repeat(40) }], service_tier: 'priority' });
    }
    await sdk(gw, live.key).audio.speech.create({ model: 'local-tts', input: 'Hi.', voice: 'en-us' as any, response_format: 'wav' });
    await expect(sdk(gw, live.key).audio.speech.create({ model: 'local-tts', input: 'Hi.', voice: 'no-such-voice' as any })).rejects.toMatchObject({ status: 400 });
    await waitForUsageRows(db, accountId, 57);

    const revoked = await admin.request('DELETE', `/keys/${revokedKeyId}`);
    expect(revoked.status).toBe(200);
    revokedAt = revoked.body.revoked_at;
    rowsNewestFirst = await db.query(
      `SELECT request_id, key_id, status, error_code FROM usage_records WHERE account_id = $1 ORDER BY created_at DESC, id DESC`,
      [accountId],
    );
    expect(rowsNewestFirst).toHaveLength(57);
  });
  afterAll(async () => {
    await browser?.close();
  });

  async function statusCounts(): Promise<StatusCount[]> {
    const rows = await suite.db.query(
      `SELECT endpoint, status, error_code, count(*)::int AS requests FROM usage_records WHERE account_id = $1
        GROUP BY 1, 2, 3 ORDER BY 1, 2, 3 NULLS FIRST`,
      [accountId],
    );
    return rows;
  }

  it('shows each latest request with its request id, copyable, and loads the rest page by page', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 }, permissions: ['clipboard-read', 'clipboard-write'] });
    const page = await openReport(context, suite.gw.url, accountId);
    const shownIds = () => page.$$eval('#latest tbody tr[data-request-id]', (trs) => trs.map((tr: any) => tr.dataset.requestId));

    expect(await shownIds()).toEqual(rowsNewestFirst.slice(0, PAGE_SIZE).map((r) => r.request_id));
    expect(await page.isVisible('#latest-more')).toBe(true);
    await page.click('#latest-more');
    await page.waitForFunction((n) => (globalThis as any).document.querySelectorAll('#latest tbody tr[data-request-id]').length === n, rowsNewestFirst.length);
    expect(await shownIds()).toEqual(rowsNewestFirst.map((r) => r.request_id));
    expect(await page.isVisible('#latest-more')).toBe(false);
    expect(await page.textContent('#latest-count')).toBe(`${rowsNewestFirst.length} shown`);

    // The id the SDK's caller got in x-request-id is on its row, as text, with its status.
    const row = page.locator(`#latest tr[data-request-id="${sdkRequestId}"]`);
    expect(await row.locator('[data-col=request_id] code').textContent()).toBe(sdkRequestId);
    expect(await row.locator('[data-col=status]').textContent()).toBe('200');
    const failed = rowsNewestFirst.find((r) => r.status === 502)!;
    expect(await page.locator(`#latest tr[data-request-id="${failed.request_id}"] [data-col=error_code]`).textContent()).toBe('upstream_error');

    // Copy puts the whole id on the clipboard.
    await row.locator('button.copy').click();
    await page.waitForFunction((id) => (globalThis as any).navigator.clipboard.readText().then((t: string) => t === id), sdkRequestId);
    expect(await row.locator('button.copy').textContent()).toBe('Copied');
    await context.close();
  });

  it('breaks each endpoint down by status and error code, with its error rate, as the records say', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    const page = await openReport(context, suite.gw.url, accountId);
    const counts = await statusCounts();
    const endpoints = [...new Set(counts.map((c) => c.endpoint))];
    expect(endpoints.sort()).toEqual(['/v1/audio/speech', '/v1/chat/completions']);

    const shown = await page.$$eval('#by-endpoint tbody tr', (trs) =>
      trs.map((tr: any) => ({
        endpoint: tr.dataset.endpoint,
        requests: tr.querySelector('[data-col=requests]').textContent,
        failed: tr.querySelector('[data-col=failed]').textContent,
        errorRate: tr.querySelector('[data-col=error_rate]').textContent,
        chips: [...tr.querySelectorAll('.chip')].map((c: any) => ({
          status: Number(c.dataset.status),
          error_code: c.dataset.errorCode || null,
          requests: Number(c.dataset.requests),
          text: c.textContent,
          failedStyle: c.classList.contains('chip-failed'),
        })),
      })),
    );
    expect(shown.map((s) => s.endpoint)).toEqual(endpoints);
    for (const endpoint of endpoints) {
      const mine = counts.filter((c) => c.endpoint === endpoint);
      const total = mine.reduce((n, c) => n + c.requests, 0);
      const failedCount = mine.filter((c) => c.status >= 400).reduce((n, c) => n + c.requests, 0);
      const row = shown.find((s) => s.endpoint === endpoint)!;
      expect(row).toMatchObject({ requests: String(total), failed: String(failedCount), errorRate: `${((failedCount / total) * 100).toFixed(1)}%` });
      expect(row.chips).toEqual(
        mine.map((c) => ({
          status: c.status,
          error_code: c.error_code,
          requests: c.requests,
          text: `${c.status}${c.error_code ? ` ${c.error_code}` : ''} × ${c.requests}`,
          failedStyle: c.status >= 400,
        })),
      );
    }
    const chat = shown.find((s) => s.endpoint === '/v1/chat/completions')!;
    expect(chat.chips.map((c) => c.error_code)).toEqual(expect.arrayContaining(['unknown_model', 'invalid_request_error', 'upstream_error']));
    expect(await page.textContent('#totals')).toContain(`${counts.filter((c) => c.status >= 400).reduce((n, c) => n + c.requests, 0)} (`);
    await context.close();
  });

  it("shows the token classes per key, per model, in the totals and under each request's tokens, as the records say", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    const page = await openReport(context, suite.gw.url, accountId);
    const classes = ['cached_tokens', 'cache_write_tokens', 'cache_write_1h_tokens', 'audio_input_tokens', 'reasoning_tokens', 'audio_output_tokens'];
    const sums = (group: string) =>
      suite.db.query(`SELECT ${group}::text AS id, ${classes.map((c) => `sum(${c})::int AS ${c}`).join(', ')} FROM usage_records WHERE account_id = $1 GROUP BY 1`, [accountId]);
    const shown = (table: string, attribute: string) =>
      page.$$eval(
        `${table} tbody tr`,
        (trs, [attr, cols]) => trs.map((tr: any) => ({ id: tr.dataset[attr], ...Object.fromEntries((cols as string[]).map((c) => [c, Number(tr.querySelector(`[data-col=${c}]`).textContent.replace(/,/g, ''))])) })),
        [attribute, classes] as const,
      );
    const byId = (rows: Record<string, unknown>[]) => Object.fromEntries(rows.map(({ id, ...rest }) => [id, rest]));

    const byKey = byId(await sums('key_id'));
    expect(byKey[revokedKeyId]).toEqual({ cached_tokens: 24, cache_write_tokens: 0, cache_write_1h_tokens: 0, audio_input_tokens: 0, reasoning_tokens: 6, audio_output_tokens: 3 });
    expect(byId(await shown('#by-key', 'keyId'))).toEqual(byKey);
    const byModel = byId((await sums('model')).filter((r: { id: string | null }) => r.id !== 'no-such-model' && r.id !== null));
    expect(byId((await shown('#by-model', 'model')).filter((r) => byModel[r.id as string]))).toEqual(byModel);
    const totals = await page.textContent('#totals');
    expect(totals).toContain('Cached prompt tokens24');
    expect(totals).toContain('Reasoning tokens6');
    expect(totals).toContain('Audio completion tokens3');

    // Each of those requests lists its classes under its tokens; a request without any shows none.
    const [classed] = await suite.db.query(`SELECT request_id FROM usage_records WHERE account_id = $1 AND cached_tokens > 0 LIMIT 1`, [accountId]);
    const usage = page.locator(`#latest tr[data-request-id="${classed.request_id}"] [data-col=usage]`);
    expect(await usage.locator('.token-classes').textContent()).toBe('8 cached · 2 reasoning · 1 audio out');
    expect(await page.locator(`#latest tr[data-request-id="${sdkRequestId}"] .token-classes`).count()).toBe(0);
    // They ran at the priority tier, which the cost says under its amount (issue 45); a flat-priced request says nothing.
    const cost = page.locator(`#latest tr[data-request-id="${classed.request_id}"] [data-col=cost_usd]`);
    expect(await cost.locator('.priced-as').textContent()).toBe('service tier priority/fast');
    expect(await cost.locator('[data-col=cost]').textContent()).toBe('0.000044');
    expect(await page.locator(`#latest tr[data-request-id="${sdkRequestId}"] .priced-as`).count()).toBe(0);
    await context.close();
  });

  it("downloads the month's statement as CSV: every charge of the ledger, closing at the account's balance (issue 35)", async () => {
    const context = await browser.newContext({ acceptDownloads: true });
    const page = await openReport(context, suite.gw.url, accountId);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#statement-csv')]);
    expect(download.suggestedFilename()).toMatch(new RegExp(`^statement-${accountId}-\\d{4}-\\d{2}-01-\\d{4}-\\d{2}-01\\.csv$`));
    const text = readFileSync((await download.path())!, 'utf8');
    const rows = text.trimEnd().split('\r\n').map((line) => line.split(','));
    const [header, opening, ...rest] = rows;
    const closing = rest.pop()!;
    const amount = header.indexOf('amount_micros');
    expect([opening[0], closing[0]]).toEqual(['opening_balance', 'closing_balance']);
    const ledger: { kind: string; amount_micros: string }[] = await suite.db.query(`SELECT kind, amount_micros FROM ledger_entries WHERE account_id = $1 ORDER BY id`, [accountId]);
    expect(rest.map((r) => [r[header.indexOf('kind')], r[amount]])).toEqual(ledger.map((l) => [l.kind, l.amount_micros]));
    const [account] = await suite.db.query(`SELECT balance_micros::text AS balance FROM accounts WHERE id = $1`, [accountId]);
    expect(closing[amount]).toBe(account.balance);
    await context.close();
  });

  it('marks the revoked key with its revocation time, in the per-key table and on its requests', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    const page = await openReport(context, suite.gw.url, accountId);
    const revokedRow = page.locator(`#by-key tr[data-key-id="${revokedKeyId}"]`);
    expect(await revokedRow.getAttribute('data-revoked-at')).toBe(revokedAt);
    expect(await revokedRow.locator('.revoked').textContent()).toBe(`revoked ${revokedAt.slice(0, 10)} ${revokedAt.slice(11, 16)} UTC`);
    const liveRow = page.locator(`#by-key tr[data-key-id="${liveKeyId}"]`);
    expect(await liveRow.getAttribute('data-revoked-at')).toBeNull();
    expect(await liveRow.locator('.revoked').count()).toBe(0);

    const revokedRequest = rowsNewestFirst.find((r) => r.key_id === revokedKeyId)!;
    const liveRequest = rowsNewestFirst.find((r) => r.key_id === liveKeyId)!;
    expect(await page.locator(`#latest tr[data-request-id="${revokedRequest.request_id}"] [data-col=key] .revoked`).count()).toBe(1);
    expect(await page.locator(`#latest tr[data-request-id="${liveRequest.request_id}"] [data-col=key] .revoked`).count()).toBe(0);
    await context.close();
  });

  it('lists the latest webhook deliveries, a failed one marked with its last error (issue 47)', async () => {
    const [event] = await suite.db.query(
      `INSERT INTO webhook_events (type, subject, period, threshold, data) VALUES ('credits.low', $1, '1', 1000000, $2) RETURNING id`,
      [`account:${accountId}`, { account_id: accountId, credits_usd: '0.500000', low_credits_usd: '1.000000' }],
    );
    const [delivery] = await suite.db.query(
      `INSERT INTO webhook_deliveries (event_id, url, status, attempts, last_status, last_error) VALUES ($1, 'http://alerts.invalid/in', 'failed', 9, 500, 'HTTP 500') RETURNING id::text AS id`,
      [event.id],
    );
    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    const page = await openReport(context, suite.gw.url, accountId);
    const row = page.locator(`#webhooks tr[data-id="${delivery.id}"]`);
    expect(await row.getAttribute('class')).toBe('webhook-failed');
    expect(await row.locator('[data-col=type]').textContent()).toBe('credits.low');
    expect(await row.locator('[data-col=last_error]').textContent()).toBe('HTTP 500');
    await context.close();
  });

  it('labels both axes of the daily chart with evenly spaced ticks that reach the month’s highest day', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    const page = await openReport(context, suite.gw.url, accountId);
    const today = new Date().toISOString().slice(0, 10);
    const bar = page.locator(`#daily-chart rect[data-day="${today}"]`);
    const todayCost = Number(await bar.getAttribute('data-cost'));
    const todayRequests = Number(await bar.getAttribute('data-requests'));
    expect(todayRequests).toBe(rowsNewestFirst.length);

    const cost = await axisTicks(page, 'cost');
    const requests = await axisTicks(page, 'requests');
    for (const [ticks, max] of [[cost, todayCost], [requests, todayRequests]] as const) {
      expect(ticks.length).toBeGreaterThanOrEqual(4);
      expect(ticks[0].value).toBe(0);
      const step = ticks[1].value;
      ticks.forEach((t, i) => expect(t.value).toBeCloseTo(step * i, 9));
      expect(ticks[ticks.length - 1].value).toBeGreaterThanOrEqual(max);
      // No taller than twice the highest day: the bars keep most of the height.
      expect(ticks[ticks.length - 1].value).toBeLessThanOrEqual(max * 2);
      // Bottom to top, apart enough to read.
      for (let i = 1; i < ticks.length; i++) expect(ticks[i - 1].y - ticks[i].y).toBeGreaterThan(ticks[i].height * 1.5);
    }
    expect(cost.map((t) => t.text)).toEqual(cost.map((t) => expect.stringMatching(new RegExp(`^\\$${t.value}0*$`.replace('.', '\\.')))));
    expect(requests.every((t) => Number.isInteger(t.value) && t.text === String(t.value))).toBe(true);
    // Both axes share the grid lines.
    expect(requests.map((t) => Math.round(t.y))).toEqual(cost.map((t) => Math.round(t.y)));

    // Today's dot sits where the request axis says today's count is.
    const dot = await page.locator(`#daily-chart circle[data-day="${today}"]`).boundingBox();
    const top = requests[requests.length - 1];
    const expectedY = requests[0].y + ((top.y - requests[0].y) * todayRequests) / top.value;
    expect(Math.abs(dot!.y + dot!.height / 2 - expectedY)).toBeLessThan(2);
    await context.close();
  });

  it('fits every table in its card at 1,280 and 1,920 px, scrolls them sideways below, and saves screenshots', async () => {
    for (const width of [1280, 1920]) {
      const context = await browser.newContext({ viewport: { width, height: 1000 } });
      const page = await openReport(context, suite.gw.url, accountId);
      await page.click('#latest-more');
      await page.waitForSelector('#latest-more', { state: 'hidden' });
      await screenshot(page, `dashboard-operator-${width}.png`);
      for (const fit of await tableFits(page)) expect({ table: fit.table, fits: fit.scrollWidth <= fit.clientWidth }).toEqual({ table: fit.table, fits: true });
      expect(await pageOverflow(page)).toBe(0);
      await context.close();
    }

    const context = await browser.newContext({ viewport: { width: 900, height: 1000 } });
    const page: Page = await openReport(context, suite.gw.url, accountId);
    expect(await pageOverflow(page)).toBe(0);
    const latest = (await tableFits(page)).find((f) => f.table === 'latest')!;
    expect(latest.overflowX).toBe('auto');
    expect(latest.scrollWidth).toBeGreaterThan(latest.clientWidth);
    const scrolled = await page.$eval('#latest', (table: any) => {
      table.parentElement.scrollLeft = 200;
      return table.parentElement.scrollLeft;
    });
    expect(scrolled).toBeGreaterThan(0);
    await screenshot(page, 'dashboard-operator-900.png');
    await context.close();
  });

  describe('GET /dashboard/api/accounts/:id/requests', () => {
    const get = (path: string, token: string | null = TEST_ADMIN_TOKEN) =>
      fetch(`${suite.gw.url}/dashboard/api/accounts/${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    const errorOf = async (res: Response) => ({ status: res.status, ...(((await res.json()) as any).error ?? {}) });

    it('pages through the account’s requests, newest first, without gaps or repeats', async () => {
      const seen: string[] = [];
      let after: string | undefined;
      for (;;) {
        const res = await get(`${accountId}/requests?limit=20${after ? `&after=${after}` : ''}`);
        expect(res.status).toBe(200);
        const body = (await res.json()) as any;
        expect(body.object).toBe('list');
        seen.push(...body.data.map((r: any) => r.request_id));
        if (!body.has_more) break;
        after = body.data[body.data.length - 1].request_id;
      }
      expect(seen).toEqual(rowsNewestFirst.map((r) => r.request_id));
      const usage = await suite.admin.usage(accountId);
      expect(usage.latest.map((r: any) => r.request_id)).toEqual(seen.slice(0, PAGE_SIZE));
      expect(usage.latest_has_more).toBe(true);
      expect(usage.by_key.find((k: any) => k.key_id === revokedKeyId).revoked_at).toBe(revokedAt);
    });

    it('keeps requests of one instant in order across a page boundary (ties broken by row id)', async () => {
      const { accountId: tied, keyId } = await suite.admin.createAccount({ name: 'same instant' });
      const ids = Array.from({ length: 5 }, (_, i) => `req_tie${i}${Date.now().toString(16)}`);
      // One statement, one now(): what a batched write of the usage records gives.
      await suite.db.query(
        `INSERT INTO usage_records (request_id, account_id, key_id, endpoint, status) SELECT unnest($1::text[]), $2, $3, '/v1/chat/completions', 200`,
        [ids, tied, keyId],
      );
      const seen: string[] = [];
      let after = '';
      do {
        const body = (await (await get(`${tied}/requests?limit=2${after && `&after=${after}`}`)).json()) as any;
        seen.push(...body.data.map((r: any) => r.request_id));
        after = body.has_more ? body.data[body.data.length - 1].request_id : '';
      } while (after);
      expect(seen).toEqual([...ids].reverse());
    });

    it.each([
      ['limit=0', 'limit'],
      ['limit=201', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=1.5', 'limit'],
      ['limit=-1', 'limit'],
      ['limit=1&limit=2', 'limit'],
      ['after=not%20an%20id', 'after'],
      [`after=req_${'0'.repeat(24)}`, 'after'],
      [`after=${'a'.repeat(65)}`, 'after'],
      ['after=', 'after'],
      ['from=yesterday', 'from'],
      ['offset=10', 'offset'],
    ])('refuses %s with 400 invalid_request_error naming %s', async (query, param) => {
      expect(await errorOf(await get(`${accountId}/requests?${query}`))).toMatchObject({ status: 400, code: 'invalid_request_error', param });
    });

    it('refuses a cursor from another account, an unknown account, and a caller without the admin token', async () => {
      const stranger = await suite.admin.createAccount({ name: 'stranger', creditsUsd: '1' });
      await sdk(suite.gw, stranger.key).chat.completions.create({ model: 'dev-echo', messages: [{ role: 'user', content: 'mine' }] });
      const [theirs] = await waitForUsageRows(suite.db, stranger.accountId, 1);
      expect(await errorOf(await get(`${accountId}/requests?after=${theirs.request_id}`))).toMatchObject({ status: 400, param: 'after' });
      expect(await errorOf(await get(`${crypto.randomUUID()}/requests`))).toMatchObject({ status: 404, code: 'not_found' });
      expect(await errorOf(await get('not-a-uuid/requests'))).toMatchObject({ status: 404, code: 'not_found' });
      expect(await errorOf(await get(`${accountId}/requests`, null))).toMatchObject({ status: 401, code: 'invalid_admin_token' });
    });
  });
});
