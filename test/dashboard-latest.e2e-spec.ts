import { join } from 'node:path';
import { Browser, Page } from 'playwright-core';
import { postChat, useGateway, waitForUsageRows } from './support/chat-support';
import { launchChromium, openReport, pageOverflow, screenshot } from './support/dashboard-browser';
import { RawConfig, TEST_ADMIN_TOKEN } from './support/test-app';

/** Chat requests per account per minute before the burst limit answers 429 (limits.chat_burst). */
const BURST = 6;
const REFUSED = 8;
const CHAT = { model: 'dev-echo', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 };

interface Row {
  request_id: string;
  key_id: string;
  key_name: string | null;
  key_prefix: string;
  model: string | null;
  endpoint: string;
  status: number;
  error_code: string | null;
  streamed: boolean;
}

/**
 * "Latest requests" as an operator narrows it (issue 48, items 4 and 5): filters by status or code, key, model,
 * endpoint and streamed, a request-id search, each row's key name and prefix, bursts of one error grouped.
 */
describe('latest requests: filters, key names, grouped bursts', () => {
  const suite = useGateway({
    config: (raw: RawConfig) => {
      raw.limits.chat_burst = { requests: BURST, window_s: 60 };
    },
  });
  let accountId: string;
  /** Two keys named alike, told apart by their prefix. */
  let first: { id: string; key: string; prefix: string };
  let second: { id: string; key: string; prefix: string };
  let rowsNewestFirst: Row[];

  const get = (query: string, account = accountId) =>
    fetch(`${suite.gw.url}/dashboard/api/accounts/${account}/requests?${query}`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } });
  const pageOf = async (query: string, account = accountId): Promise<{ data: Row[]; has_more: boolean }> => {
    const res = await get(query, account);
    expect(res.status).toBe(200);
    return (await res.json()) as { data: Row[]; has_more: boolean };
  };
  const idsOf = async (query: string) => (await pageOf(query)).data.map((r) => r.request_id);
  const expected = (keep: (r: Row) => boolean) => rowsNewestFirst.filter(keep).map((r) => r.request_id);

  beforeAll(async () => {
    const { gw, admin, db } = suite;
    const account = (await admin.request('POST', '/accounts', { name: 'Latest filters' })).body;
    accountId = account.id;
    await admin.addCredits(accountId, '5');
    const newKey = async () => {
      const created = (await admin.request('POST', `/accounts/${accountId}/keys`, { name: 'ci' })).body;
      return { id: created.id, key: created.key, prefix: created.prefix };
    };
    first = await newKey();
    second = await newKey();
    const streamed = async (key: string) => {
      const res = await postChat(gw, key, { ...CHAT, stream: true });
      expect(res.status).toBe(200);
      await res.text();
    };
    // Within the burst: successes on both keys (one streamed each) and one unknown model; then REFUSED requests over it.
    expect((await postChat(gw, first.key, CHAT)).status).toBe(200);
    await streamed(first.key);
    expect((await postChat(gw, second.key, CHAT)).status).toBe(200);
    await streamed(second.key);
    expect((await postChat(gw, second.key, { ...CHAT, model: 'no-such-model' })).status).toBe(400);
    expect((await postChat(gw, first.key, CHAT)).status).toBe(200);
    // A charged request's record is written with its charge, just after the answer: waited for, so the 429s come after it.
    await waitForUsageRows(db, accountId, BURST);
    for (let i = 0; i < REFUSED; i++) expect((await postChat(gw, first.key, CHAT)).status).toBe(429);
    await waitForUsageRows(db, accountId, BURST + REFUSED);
    rowsNewestFirst = await db.query(
      `SELECT request_id, key_id, model, endpoint, status, error_code, streamed FROM usage_records WHERE account_id = $1 ORDER BY created_at DESC, id DESC`,
      [accountId],
    );
    expect(rowsNewestFirst).toHaveLength(BURST + REFUSED);
  });

  describe('GET /dashboard/api/accounts/:id/requests', () => {
    it('gives each row its key name and prefix, and whether it streamed', async () => {
      const { data } = await pageOf('');
      expect(data.map((r) => r.request_id)).toEqual(expected(() => true));
      for (const row of data) {
        const key = row.key_id === first.id ? first : second;
        expect(row).toMatchObject({ key_name: 'ci', key_prefix: key.prefix });
      }
      expect(first.prefix).not.toBe(second.prefix);
      expect(data.filter((r) => r.streamed).map((r) => r.key_id).sort()).toEqual([first.id, second.id].sort());
    });

    it.each<[string, (r: Row) => boolean]>([
      ['status=429', (r) => r.status === 429],
      ['status=4xx', (r) => r.status >= 400 && r.status < 500],
      ['status=2xx', (r) => r.status < 300],
      ['status=5xx', (r) => r.status >= 500],
      ['status=failed', (r) => r.status >= 400],
      ['status=400', (r) => r.status === 400],
      ['code=rate_limit_exceeded', (r) => r.error_code === 'rate_limit_exceeded'],
      ['code=unknown_model', (r) => r.error_code === 'unknown_model'],
      ['model=dev-echo', (r) => r.model === 'dev-echo'],
      ['model=no-such-model', (r) => r.model === 'no-such-model'],
      ['model=(none)', (r) => r.model === null],
      ['endpoint=/v1/chat/completions', (r) => r.endpoint === '/v1/chat/completions'],
      ['endpoint=/v1/embeddings', () => false],
      ['streamed=true', (r) => r.streamed],
      ['streamed=false', (r) => !r.streamed],
    ])('narrows to %s', async (query, keep) => {
      const want = expected(keep);
      expect(await idsOf(query)).toEqual(want);
    });

    it('narrows to a key, to a request id or its start, and to several filters at once', async () => {
      expect(await idsOf(`key_id=${second.id}`)).toEqual(expected((r) => r.key_id === second.id));
      expect(await idsOf(`key_id=${second.id}&streamed=true`)).toEqual(expected((r) => r.key_id === second.id && r.streamed));
      expect(await idsOf(`key_id=${first.id}&status=failed&code=rate_limit_exceeded`)).toHaveLength(REFUSED);
      expect(await idsOf(`status=2xx&model=(none)`)).toEqual([]);
      const target = rowsNewestFirst[3].request_id;
      expect(await idsOf(`request_id=${target}`)).toEqual([target]);
      // The start of an id finds it (ids share their first characters, so a short start may find others too).
      expect(await idsOf(`request_id=${target.slice(0, 12)}`)).toContain(target);
      expect(await idsOf(`request_id=${target}x`)).toEqual([]);
    });

    it('never names another account’s key, nor shows its requests', async () => {
      const stranger = await suite.admin.createAccount({ name: 'stranger', creditsUsd: '1' });
      expect((await postChat(suite.gw, stranger.key, CHAT)).status).toBe(200);
      await waitForUsageRows(suite.db, stranger.accountId, 1);
      expect(await idsOf(`key_id=${stranger.keyId}`)).toEqual([]);
      const theirs = (await pageOf('', stranger.accountId)).data;
      expect(theirs).toHaveLength(1);
      expect(theirs[0]).toMatchObject({ key_id: stranger.keyId, key_name: 'test' });
    });

    it('pages through filtered rows with after, without gaps or repeats', async () => {
      for (const filter of ['status=failed', `key_id=${first.id}`, 'streamed=false&status=4xx']) {
        const seen: string[] = [];
        let after = '';
        do {
          const page = await pageOf(`${filter}&limit=3${after && `&after=${after}`}`);
          expect(page.data.length).toBeLessThanOrEqual(3);
          seen.push(...page.data.map((r) => r.request_id));
          after = page.has_more ? page.data[page.data.length - 1].request_id : '';
        } while (after);
        expect([filter, seen]).toEqual([filter, await idsOf(filter)]);
        expect(seen.length).toBeGreaterThan(3);
      }
    });

    it.each([
      ['status=42', 'status'],
      ['status=600', 'status'],
      ['status=6xx', 'status'],
      ['status=errors', 'status'],
      ['status=4xx&status=5xx', 'status'],
      ['code=Rate-Limit', 'code'],
      [`code=${'a'.repeat(65)}`, 'code'],
      ['key_id=not-a-uuid', 'key_id'],
      ['model=', 'model'],
      [`model=${'m'.repeat(201)}`, 'model'],
      ['model=a%00b', 'model'],
      ['endpoint=chat', 'endpoint'],
      ['endpoint=/v1/chat%20completions', 'endpoint'],
      ['streamed=yes', 'streamed'],
      ['request_id=req_a', 'request_id'],
      ['request_id=req%20abcdef', 'request_id'],
      ['sort=asc', 'sort'],
    ])('refuses %s with 400 invalid_request_error naming %s', async (query, param) => {
      const res = await get(query);
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error).toMatchObject({ code: 'invalid_request_error', param });
    });
  });

  describe('in the browser', () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await launchChromium();
    });
    afterAll(() => browser?.close());

    const latest = (page: Page) => page.locator('[data-panel="latest"]');
    /** Waits until the table shows the answer to these API filters (latest.js sets data-filters once it has). */
    const shownFor = (page: Page, filters: string) =>
      page.waitForFunction((want) => {
        const table = (globalThis as any).document.getElementById('latest');
        return table.dataset.filters === want && table.getAttribute('aria-busy') !== 'true';
      }, filters);
    const shownIds = (page: Page) => page.$$eval('#latest tbody tr[data-request-id]', (trs) => trs.map((tr: any) => tr.dataset.requestId));
    /** axe-core's findings (WCAG 2.x A/AA, best practices) in the latest-requests panel only: the other panels are other tests'. */
    const axeOfPanel = async (page: Page) => {
      if (!(await page.evaluate(() => 'axe' in globalThis))) await page.addScriptTag({ path: require.resolve('axe-core/axe.min.js') });
      return page.evaluate(async () => {
        const g = globalThis as any;
        const result = await g.axe.run(g.document.querySelector('[data-panel="latest"]'), {
          runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
        });
        return result.violations.map((v: any) => ({ id: v.id, nodes: v.nodes.slice(0, 3).map((n: any) => n.target.join(' ')) }));
      });
    };
    const visibleIds = (page: Page) => page.$$eval('#latest tbody tr[data-request-id]:not([hidden])', (trs) => trs.map((tr: any) => tr.dataset.requestId));

    it('groups the burst of 429s into one row that expands from the keyboard, and names each key with its prefix', async () => {
      const context = await browser.newContext({ viewport: { width: 1440, height: 1000 }, bypassCSP: true });
      const page = await openReport(context, suite.gw.url, accountId);
      await shownFor(page, '');
      expect(await shownIds(page)).toEqual(expected(() => true));
      const refused = expected((r) => r.status === 429);
      expect(await visibleIds(page)).toEqual(expected((r) => r.status !== 429));

      const run = page.locator('#latest tr.run');
      expect(await run.count()).toBe(1);
      const runText = await run.textContent();
      expect(runText).toContain(`429 rate_limit_exceeded × ${REFUSED}`);
      expect(runText).toContain(first.prefix);
      expect(runText).toMatch(/from \d{4}-\d\d-\d\d \d\d:\d\d:\d\d to \d\d:\d\d:\d\d UTC/);
      const toggle = page.getByRole('button', { name: new RegExp(`^Show ${REFUSED} requests: 429 rate_limit_exceeded$`) });
      await toggle.focus();
      await page.keyboard.press('Enter');
      const hide = page.getByRole('button', { name: new RegExp(`^Hide ${REFUSED} requests`) });
      expect(await hide.getAttribute('aria-expanded')).toBe('true');
      expect(await visibleIds(page)).toEqual(expected(() => true));
      expect(await axeOfPanel(page)).toEqual([]);
      // Their model is unknown, and the row says why rather than "(none)".
      expect(await page.locator(`#latest tr[data-request-id="${refused[0]}"] [data-col=model]`).textContent()).toBe('unknown: refused before its body was read');
      await hide.press('Space');
      expect(await visibleIds(page)).toEqual(expected((r) => r.status !== 429));

      // Both keys are named "ci": each row shows its key's prefix, and the Key filter lists both by name and prefix.
      for (const row of rowsNewestFirst.filter((r) => r.status !== 429)) {
        const key = row.key_id === first.id ? first : second;
        const cell = page.locator(`#latest tr[data-request-id="${row.request_id}"] [data-col=key]`);
        expect([await cell.locator('.key-name').textContent(), await cell.locator('[data-col=key_prefix]').textContent()]).toEqual(['ci', key.prefix]);
      }
      const keyChoices = await latest(page).getByLabel('Key', { exact: true }).locator('option').allTextContents();
      expect(keyChoices).toEqual(expect.arrayContaining([`ci · ${first.prefix}`, `ci · ${second.prefix}`]));
      // A streamed request is marked.
      for (const row of rowsNewestFirst) {
        expect(await page.locator(`#latest tr[data-request-id="${row.request_id}"] .streamed`).count()).toBe(row.streamed ? 1 : 0);
      }
      // The copy buttons are out of the Tab order; the ids stay selectable.
      expect(await page.locator('#latest button.copy[tabindex="-1"]').count()).toBe(rowsNewestFirst.length);
      await screenshot(page, 'dashboard-latest-1440.png');
      await latest(page).screenshot({ path: join(__dirname, '..', 'test-output', 'dashboard-latest-panel-1440.png') });
      await context.close();
    });

    it('filters by status, key, streamed and a request id, and shows what matched', async () => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
      const page = await openReport(context, suite.gw.url, accountId);
      await shownFor(page, '');

      await latest(page).getByLabel('Status', { exact: true }).selectOption({ label: `429 rate_limit_exceeded (${REFUSED})` });
      await shownFor(page, 'status=429&code=rate_limit_exceeded');
      expect(await shownIds(page)).toEqual(expected((r) => r.status === 429));
      expect(await page.locator('#latest-count').textContent()).toBe(`${REFUSED} shown matching the filters`);

      await latest(page).getByLabel('Status', { exact: true }).selectOption({ label: '2xx' });
      await shownFor(page, 'status=2xx');
      expect(await shownIds(page)).toEqual(expected((r) => r.status < 300));

      await latest(page).getByLabel('Key', { exact: true }).selectOption(second.id);
      await shownFor(page, `status=2xx&key_id=${second.id}`);
      expect(await shownIds(page)).toEqual(expected((r) => r.status < 300 && r.key_id === second.id));
      await latest(page).getByLabel('Streamed', { exact: true }).selectOption({ label: 'Yes' });
      await shownFor(page, `status=2xx&key_id=${second.id}&streamed=true`);
      expect(await shownIds(page)).toEqual(expected((r) => r.status < 300 && r.key_id === second.id && r.streamed));

      await page.getByRole('button', { name: 'Clear filters' }).click();
      await shownFor(page, '');
      expect(await shownIds(page)).toEqual(expected(() => true));
      expect(await latest(page).getByLabel('Status', { exact: true }).inputValue()).toBe('');

      const target = rowsNewestFirst.find((r) => r.status === 400)!.request_id;
      await latest(page).getByLabel('Request id', { exact: true }).fill(target);
      await shownFor(page, `request_id=${target}`);
      expect(await shownIds(page)).toEqual([target]);
      await latest(page).getByLabel('Request id', { exact: true }).fill('req_x');
      await latest(page).getByLabel('Request id', { exact: true }).press('Enter');
      expect(await page.locator('#latest-state').textContent()).toContain('at least 6 characters');
      await latest(page).getByLabel('Request id', { exact: true }).fill('req_nothing-like-this');
      await shownFor(page, 'request_id=req_nothing-like-this');
      expect(await page.locator('#latest tbody').textContent()).toContain('No requests in this period match these filters.');
      await context.close();
    });

    it('keeps the filters when it loads more', async () => {
      const { accountId: busy, keyId } = await suite.admin.createAccount({ name: 'Busy account' });
      const other = (await suite.admin.request('POST', `/accounts/${busy}/keys`, { name: 'other' })).body;
      // 120 requests a second apart, a success and a 502 in turn, the 502s on each key in turn: none in a run.
      await suite.db.query(
        `INSERT INTO usage_records (request_id, account_id, key_id, endpoint, status, error_code, created_at)
         SELECT 'req_busy' || g || '_' || $4, $1, CASE WHEN g % 4 = 1 THEN $3::uuid ELSE $2::uuid END, '/v1/chat/completions',
                CASE WHEN g % 2 = 1 THEN 502 ELSE 200 END, CASE WHEN g % 2 = 1 THEN 'upstream_error' END, now() - g * interval '1 second'
           FROM generate_series(1, 120) g`,
        [busy, keyId, other.id, Date.now().toString(16)],
      );
      const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
      const page = await openReport(context, suite.gw.url, busy);
      await shownFor(page, '');
      await latest(page).getByLabel('Status', { exact: true }).selectOption({ label: '5xx' });
      await shownFor(page, 'status=5xx');
      expect(await shownIds(page)).toHaveLength(50);
      await latest(page).getByRole('button', { name: /Load more/ }).click();
      await page.waitForFunction(() => (globalThis as any).document.querySelectorAll('#latest tbody tr[data-request-id]').length === 60);
      const statuses = await page.$$eval('#latest tbody tr[data-request-id] [data-col=status]', (spans) => spans.map((s) => s.textContent));
      expect(statuses).toEqual(Array(60).fill('502'));
      expect(await latest(page).getByRole('button', { name: /Load more/ }).isHidden()).toBe(true);
      expect(await page.locator('#latest-count').textContent()).toBe('60 shown matching the filters');
      await context.close();
    });

    it('shows one card per request at 390 px, the filters stacked, nothing wider than the phone', async () => {
      const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, bypassCSP: true });
      const page = await openReport(context, suite.gw.url, accountId);
      await shownFor(page, '');
      await page.getByRole('button', { name: new RegExp(`^Show ${REFUSED} requests`) }).click();
      expect(await pageOverflow(page)).toBe(0);
      const cards = await page.$$eval('#latest tbody tr:not([hidden])', (trs) =>
        trs.map((tr: any) => {
          const box = tr.getBoundingClientRect();
          return { left: box.left, right: box.right, display: (globalThis as any).getComputedStyle(tr).display };
        }),
      );
      expect(cards).toHaveLength(rowsNewestFirst.length + 1);
      for (const card of cards) {
        expect(card.display).toBe('block');
        expect(card.left).toBeGreaterThanOrEqual(0);
        expect(card.right).toBeLessThanOrEqual(390);
      }
      const boxes = await Promise.all(['Status', 'Key', 'Model', 'Endpoint', 'Streamed', 'Request id'].map((label) => latest(page).getByLabel(label, { exact: true }).boundingBox()));
      for (let i = 1; i < boxes.length; i++) {
        expect(boxes[i]!.x).toBe(boxes[0]!.x);
        expect(boxes[i]!.y).toBeGreaterThan(boxes[i - 1]!.y);
      }
      // Each value is labelled in its card, the way the table's header would.
      const label = await page.$eval('#latest tbody tr[data-request-id] td[data-col=result]', (td: any) =>
        (globalThis as any).getComputedStyle(td, '::before').content,
      );
      expect(label).toBe('"Status"');
      expect(await axeOfPanel(page)).toEqual([]);
      await screenshot(page, 'dashboard-latest-390.png');
      await latest(page).screenshot({ path: join(__dirname, '..', 'test-output', 'dashboard-latest-panel-390.png') });
      await context.close();
    });
  });

  describe('the model of a rate-limited request', () => {
    it('is unknown for the burst limit (refused before its body is read), and recorded for rpm', async () => {
      // The burst limit answers before the body is read (DESIGN.md section 5): its 429s have no model to record.
      expect(rowsNewestFirst.filter((r) => r.status === 429).every((r) => r.model === null && r.error_code === 'rate_limit_exceeded')).toBe(true);
      // rpm (DESIGN.md 12.4) is counted once the body is read: its 429 names the model asked for, and charges nothing.
      const limited = await suite.admin.createAccount({ name: 'rpm limited', creditsUsd: '1' });
      expect((await suite.admin.request('PATCH', `/accounts/${limited.accountId}`, { rpm: 1 })).status).toBe(200);
      expect((await postChat(suite.gw, limited.key, CHAT)).status).toBe(200);
      expect((await postChat(suite.gw, limited.key, CHAT)).status).toBe(429);
      const rows = await waitForUsageRows(suite.db, limited.accountId, 2);
      // The charged success may be written after the refusal: compared by status.
      expect(rows.map((r) => [r.status, r.error_code, r.model, r.cost_micros]).sort((a, b) => Number(a[0]) - Number(b[0]))).toEqual([
        [200, null, 'dev-echo', expect.not.stringMatching(/^0$/)],
        [429, 'rate_limit_exceeded', 'dev-echo', '0'],
      ]);
    });
  });
});
