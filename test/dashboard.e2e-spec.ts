import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { toFile } from 'openai';
import { Browser, Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { postChat, sdk, usd, waitForUsageRows } from './support/chat-support';
import { launchChromium, screenshot } from './support/dashboard-browser';
import { startTestApp, TEST_ADMIN_TOKEN, TestApp } from './support/test-app';

interface Figures {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  audio_seconds: number;
  input_chars: number;
  cost_usd: string;
}

/**
 * Per-key or per-model figures straight from the tables: usage records, and the ledger for the cost.
 * Models outside the catalog count as one, as the dashboard shows them.
 */
async function ledgerFigures(db: DataSource, accountId: string, groupBy: 'key_id' | 'model', catalogIds: string[] = []): Promise<Map<string, Figures>> {
  const id = groupBy === 'model' ? `CASE WHEN u.model = ANY($2) THEN u.model WHEN u.model IS NULL THEN '' ELSE '(unknown models)' END` : `u.key_id::text`;
  const rows: Record<string, string>[] = await db.query(
    `SELECT ${id} AS id, count(*) AS requests, sum(u.prompt_tokens) AS prompt_tokens,
            sum(u.completion_tokens) AS completion_tokens, sum(u.audio_seconds) AS audio_seconds,
            sum(u.input_chars) AS input_chars, COALESCE(sum(-l.amount_micros), 0) AS charged_micros
       FROM usage_records u
       LEFT JOIN ledger_entries l ON l.kind = 'charge' AND l.request_id = u.request_id AND l.account_id = u.account_id
      WHERE u.account_id = $1 GROUP BY 1`,
    groupBy === 'model' ? [accountId, catalogIds] : [accountId],
  );
  return new Map(
    rows.map((r) => [
      r.id,
      {
        requests: Number(r.requests),
        prompt_tokens: Number(r.prompt_tokens),
        completion_tokens: Number(r.completion_tokens),
        audio_seconds: Number(r.audio_seconds),
        input_chars: Number(r.input_chars),
        cost_usd: usd(BigInt(r.charged_micros)),
      },
    ]),
  );
}

/** The rows of one of the dashboard's tables, by their data-* id, with their cells by column. */
async function shownFigures(page: Page, table: string, idAttribute: 'keyId' | 'model'): Promise<Map<string, Figures>> {
  const rows = await page.$$eval(
    `${table} tbody tr`,
    (trs, attr) =>
      trs.map((tr) => ({
        id: (tr as any).dataset[attr] ?? '',
        cells: Object.fromEntries([...(tr as any).cells].map((td: any) => [td.dataset.col, td.textContent ?? ''])),
      })),
    idAttribute,
  );
  const int = (text: string) => Number(text.replace(/,/g, ''));
  return new Map(
    rows.map(({ id, cells }) => [
      id,
      {
        requests: int(cells.requests),
        prompt_tokens: int(cells.prompt_tokens),
        completion_tokens: int(cells.completion_tokens),
        audio_seconds: Number(cells.audio_seconds),
        input_chars: int(cells.input_chars),
        cost_usd: cells.cost_usd,
      },
    ]),
  );
}

describe('usage dashboard at /dashboard (browser)', () => {
  let gw: TestApp;
  let admin: AdminClient;
  let db: DataSource;
  let browser: Browser;

  beforeAll(async () => {
    gw = await startTestApp();
    admin = new AdminClient(gw.url);
    db = gw.app.get(DataSource);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await gw.close();
  });

  it('signs in, opens an account with chat and audio usage, and shows per-key and per-model figures equal to the ledger', async () => {
    const { accountId, key: chatKey, keyId: chatKeyId } = await admin.createAccount({
      name: 'Dashboard customer',
      creditsUsd: '2',
      subscription: 'active',
    });
    const audio = (await admin.request('POST', `/accounts/${accountId}/keys`, { name: 'audio-key' })).body;

    // Chat usage (dev-echo, billed) on the first key: one plain, one streamed, two refused (one row for both).
    await sdk(gw, chatKey).chat.completions.create({ model: 'dev-echo', messages: [{ role: 'user', content: 'Count the tokens of this sentence.' }] });
    const stream = await sdk(gw, chatKey).chat.completions.create({
      model: 'dev-echo',
      messages: [{ role: 'user', content: 'Stream these words back to me please' }],
      stream: true,
    });
    for await (const chunk of stream) void chunk;
    expect((await postChat(gw, chatKey, { model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] })).status).toBe(400);
    expect((await postChat(gw, chatKey, { model: '<b>junk</b>', messages: [{ role: 'user', content: 'x' }] })).status).toBe(400);

    // Audio usage (included, not billed) on the second key: speech, then the transcription of that speech.
    const sentence = 'The dashboard shows every request.';
    const speech = await sdk(gw, audio.key).audio.speech.create({ model: 'local-tts', input: sentence, voice: 'en-us' as any, response_format: 'wav' });
    const wav = Buffer.from(await speech.arrayBuffer());
    expect(wav.subarray(0, 4).toString('latin1')).toBe('RIFF');
    await sdk(gw, audio.key).audio.transcriptions.create({ file: await toFile(wav, 'speech.wav'), model: 'whisper-1' });

    const records = await waitForUsageRows(db, accountId, 6);
    expect(records).toHaveLength(6);
    const byKey = await ledgerFigures(db, accountId, 'key_id');
    const byModel = await ledgerFigures(db, accountId, 'model', gw.config.catalog.map((m) => m.id));
    expect(byModel.get('(unknown models)')).toMatchObject({ requests: 2, cost_usd: '0.000000' });
    expect([...byKey.keys()].sort()).toEqual([chatKeyId, audio.id].sort());
    expect(byKey.get(chatKeyId)!.cost_usd).not.toBe('0.000000');
    expect(byKey.get(audio.id)).toMatchObject({ requests: 2, cost_usd: '0.000000', input_chars: sentence.length });
    expect(byKey.get(audio.id)!.audio_seconds).toBeGreaterThan(0);

    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    const page = await context.newPage();
    const failedRequests: string[] = [];
    page.on('requestfailed', (r) => failedRequests.push(r.url()));
    page.on('pageerror', (e) => failedRequests.push(`pageerror: ${e.message}`));
    await page.goto(`${gw.url}/dashboard`);

    // A wrong token is refused and not kept.
    await page.fill('#admin-token', 'not-the-admin-token');
    await page.click('#sign-in-form button[type=submit]');
    await page.waitForSelector('#sign-in-error:not([hidden])');
    expect(await page.textContent('#sign-in-error')).toContain('refused');
    expect(await page.evaluate(() => (globalThis as any).sessionStorage.length)).toBe(0);

    await page.fill('#admin-token', TEST_ADMIN_TOKEN);
    await page.click('#sign-in-form button[type=submit]');
    await page.waitForSelector('#workspace:not([hidden])');
    await page.fill('#account-search', 'Dashboard customer');
    await page.waitForFunction((id) => [...(globalThis as any).document.getElementById('account').options].some((o: any) => o.value === id), accountId);
    await page.selectOption('#account', accountId);
    const month = new Date().toISOString().slice(0, 7);
    await page.waitForFunction((want) => (globalThis as any).document.body.dataset.loaded === want, `${accountId}/${month}`);

    expect(await shownFigures(page, '#by-key', 'keyId')).toEqual(byKey);
    expect(await shownFigures(page, '#by-model', 'model')).toEqual(byModel);
    const chargedTotal = [...byKey.values()].reduce((sum, f) => sum + BigInt(f.cost_usd.replace('.', '')), 0n);
    expect(await page.textContent('#totals')).toContain(`$${usd(chargedTotal)}`);
    expect(await page.textContent('#account-facts')).toContain(`$${(await admin.account(accountId)).credits_usd}`);

    // Latest requests: every one, with status and error code; the chart has today's bar.
    const latest = await page.$$eval('#latest tbody tr', (trs) =>
      trs.map((tr) => ({
        id: (tr as any).dataset.requestId,
        status: tr.querySelector('[data-col=status]')!.textContent,
        code: tr.querySelector('[data-col=error_code]')!.textContent,
      })),
    );
    expect(latest.map((r) => r.id).sort()).toEqual(records.map((r) => r.request_id).sort());
    expect(latest).toContainEqual({ id: records.find((r) => r.status === 400)!.request_id, status: '400', code: 'unknown_model' });
    const shownModels = await page.$$eval('#latest tbody tr [data-col=model]', (tds) => tds.map((td) => td.textContent));
    expect(shownModels).toEqual(expect.arrayContaining(['no-such-model', '<b>junk</b>']));
    const today = new Date().toISOString().slice(0, 10);
    expect(await page.getAttribute(`#daily-chart rect[data-day="${today}"]`, 'data-requests')).toBe('6');
    expect(await page.getAttribute(`#daily-chart rect[data-day="${today}"]`, 'data-cost')).toBe(usd(chargedTotal));

    // The token lives in this tab's session only.
    expect(await page.evaluate(() => (globalThis as any).sessionStorage.getItem('gateway.adminToken'))).toBe(TEST_ADMIN_TOKEN);
    expect(await page.evaluate(() => (globalThis as any).localStorage.length)).toBe(0);
    expect(await context.cookies()).toEqual([]);
    expect(failedRequests).toEqual([]);

    await screenshot(page, 'dashboard.png');

    await page.click('#sign-out');
    await page.waitForSelector('#sign-in:not([hidden])');
    expect(await page.evaluate(() => (globalThis as any).sessionStorage.length)).toBe(0);
    await context.close();
  });

  it('serves its own page and assets (no CDN), and its account list only with the admin token', async () => {
    const page = await fetch(`${gw.url}/dashboard`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await page.text();
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    // The script is a few ES modules, each served from the same folder with the same headers.
    const assets = readdirSync(join(__dirname, '..', 'src', 'dashboard', 'assets')).filter((name) => name !== 'index.html');
    expect(assets).toEqual(expect.arrayContaining(['dashboard.js', 'panels.js', 'dashboard.css']));
    for (const asset of assets) {
      const res = await fetch(`${gw.url}/dashboard/assets/${asset}`);
      expect({ asset, status: res.status, type: res.headers.get('content-type') }).toEqual({
        asset,
        status: 200,
        type: asset.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8',
      });
    }
    const missing = await fetch(`${gw.url}/dashboard/assets/..%2Fdashboard.controller.ts`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as any).error.code).toBe('not_found');

    const anonymous = await fetch(`${gw.url}/dashboard/api/accounts`);
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as any).error.code).toBe('invalid_admin_token');
    const { accountId } = await admin.createAccount({ name: 'Findable by name' });
    const found = await fetch(`${gw.url}/dashboard/api/accounts?q=findable`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } });
    expect(await found.json()).toEqual([expect.objectContaining({ id: accountId, name: 'Findable by name' })]);
    const byId = await fetch(`${gw.url}/dashboard/api/accounts?q=${accountId}`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } });
    expect(((await byId.json()) as any[]).map((a) => a.id)).toEqual([accountId]);
  });
});
