import { AdminClient } from './support/admin-client';
import { TEST_ADMIN_TOKEN } from './support/test-app';
import { FakeUpstream } from './support/fake-upstream';
import { moneyOf, postChat, PricedModel, useFakeGateway, waitForUsageRows } from './support/chat-support';
import { costMicrosByClass } from './support/cost-oracle';

/**
 * Statements (issue 35 item 3, DESIGN.md section 11): opening balance, every ledger movement of the period with
 * its request, key, model, tokens and µUSD by class, closing balance; JSON and CSV; opening + movements = closing
 * to the µUSD; a key holder sees only its own account.
 */
const MODEL: PricedModel = { id: 'statement-chat', input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75, cacheWrite1h: 6, maxOutput: 1000 };

describe('statements', () => {
  const suite = useFakeGateway([MODEL]);
  let fake: FakeUpstream;
  beforeAll(() => ({ fake } = suite));
  beforeEach(() => fake.resetState());

  const statement = async (path: string, headers: Record<string, string>) => {
    const res = await fetch(`${suite.gw.url}${path}`, { headers });
    return { status: res.status, type: res.headers.get('content-type') ?? '', disposition: res.headers.get('content-disposition'), text: await res.text() };
  };
  const admin = (path: string, accept?: string) => statement(`/admin/v1/accounts${path}`, { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, ...(accept && { accept }) });

  /**
   * The months the movements are pinned in, whatever the wall clock says (a run may cross a month's end): each
   * ledger entry's time is set to one of them once written, and every statement names its period (`to` as a
   * timestamp: a date-only `to` takes in that whole day).
   */
  const LAST_MONTH = { from: '2025-01-01T00:00:00Z', to: '2025-02-01T00:00:00Z', at: '2025-01-20T12:00:00Z' };
  const THIS_MONTH = { from: '2025-02-01T00:00:00Z', to: '2025-03-01T00:00:00Z', at: '2025-02-10T12:00:00Z' };
  const period = (month: typeof THIS_MONTH) => `from=${month.from}&to=${month.to}`;
  /** Moves the account's ledger entries not pinned yet to `month`. */
  const pinTo = (accountId: string, month: typeof THIS_MONTH) =>
    suite.db.query(`UPDATE ledger_entries SET created_at = $2 WHERE account_id = $1 AND created_at > $3`, [accountId, month.at, THIS_MONTH.to]);

  /** Top-ups and charges last month and this month, a refused and a failed request: what the statement must show. */
  async function monthOfMovements() {
    const client = new AdminClient(suite.gw.url);
    const { accountId, key, keyId } = await client.createAccount({ creditsUsd: '2' });
    fake.reply = { content: 'last month', promptTokens: 100, completionTokens: 10 };
    expect((await postChat(suite.gw, key, { model: MODEL.id, messages: [{ role: 'user', content: 'a' }] })).status).toBe(200);
    await moneyOf(suite.db, accountId);
    // Those two movements happened last month.
    await pinTo(accountId, LAST_MONTH);
    await client.addCredits(accountId, '1.5');
    fake.reply = { content: 'cached', promptTokens: 2000, completionTokens: 40, usageDetails: { prompt: { cached_tokens: 1200, cache_write_tokens: 500, cache_write_1h_tokens: 200 }, completion: { reasoning_tokens: 15 } } };
    expect((await postChat(suite.gw, key, { model: MODEL.id, messages: [{ role: 'user', content: 'b' }] })).status).toBe(200);
    fake.reply = { content: 'plain', promptTokens: 7, completionTokens: 3 };
    expect((await postChat(suite.gw, key, { model: MODEL.id, messages: [{ role: 'user', content: 'c' }], stream: true })).status).toBe(200);
    // Refused (400) and failed (502): no movement.
    expect((await postChat(suite.gw, key, { model: MODEL.id, messages: [], max_tokens: -1 })).status).toBe(400);
    fake.failNext('status500');
    expect((await postChat(suite.gw, key, { model: MODEL.id, messages: [{ role: 'user', content: 'd' }] })).status).toBe(502);
    await waitForUsageRows(suite.db, accountId, 5);
    const money = await moneyOf(suite.db, accountId);
    await pinTo(accountId, THIS_MONTH);
    return { accountId, key, keyId, money };
  }

  it('reconciles a month to the µUSD in JSON: opening balance, top-ups and charges by class, closing balance = the balance', async () => {
    const { accountId, keyId, money } = await monthOfMovements();
    const res = await admin(`/${accountId}/statement?${period(THIS_MONTH)}`);
    expect(res.status).toBe(200);
    expect(res.type).toMatch(/^application\/json/);
    const body = JSON.parse(res.text);
    const lastMonth = costMicrosByClass(MODEL, { prompt: 100, completion: 10 });
    expect(body.opening_balance_micros).toBe(String(2_000_000n - lastMonth));
    expect(body.movements.map((m: any) => m.kind)).toEqual(['top_up', 'charge', 'charge']);
    expect(body.movement_count).toBe(3);
    const sum = body.movements.reduce((s: bigint, m: any) => s + BigInt(m.amount_micros), BigInt(body.opening_balance_micros));
    expect(body.closing_balance_micros).toBe(String(sum));
    expect(BigInt(body.closing_balance_micros)).toBe(money.balance);
    expect(body.closing_balance_usd).toBe(`${money.balance / 1_000_000n}.${String(money.balance % 1_000_000n).padStart(6, '0')}`);

    const cached = body.movements[1];
    const classes = { prompt: 2000, completion: 40, cached: 1200, cacheWrite: 500, cacheWrite1h: 200 };
    expect(cached).toMatchObject({ key_id: keyId, model: MODEL.id, endpoint: '/v1/chat/completions', amount_micros: String(-costMicrosByClass(MODEL, classes)) });
    expect(cached.request_id).toMatch(/\S/);
    expect(cached.tokens).toEqual({ input: 300, cached_input: 1200, cache_write_5m: 300, cache_write_1h: 200, audio_input: 0, output: 40, audio_output: 0, reasoning: 15 });
    // Each class at its own price, exactly: 300 × 3 + 1200 × 0.3 + 300 × 3.75 + 200 × 6 µUSD; 40 × 15.
    expect(cached.micros_by_class).toEqual({ input: '900.000000', cached_input: '360.000000', cache_write_5m: '1125.000000', cache_write_1h: '1200.000000', audio_input: '0.000000', output: '600.000000', audio_output: '0.000000' });
    expect(body.movements[0]).toMatchObject({ kind: 'top_up', amount_micros: '1500000', request_id: null, tokens: null, micros_by_class: null });
  });

  it('answers the same statement as CSV (format=csv or Accept: text/csv), one row per movement between the balances', async () => {
    const { accountId, money } = await monthOfMovements();
    for (const res of [await admin(`/${accountId}/statement?format=csv&${period(THIS_MONTH)}`), await admin(`/${accountId}/statement?${period(THIS_MONTH)}`, 'text/csv')]) {
      expect(res.status).toBe(200);
      expect(res.type).toMatch(/^text\/csv/);
      expect(res.disposition).toMatch(/^attachment; filename="statement-/);
      const lines = res.text.trimEnd().split('\r\n').map((l) => l.split(','));
      const [header, opening, ...rest] = lines;
      const closing = rest.pop()!;
      const col = (name: string) => header.indexOf(name);
      expect(opening[0]).toBe('opening_balance');
      expect(closing[0]).toBe('closing_balance');
      expect(rest.map((r) => r[col('kind')])).toEqual(['top_up', 'charge', 'charge']);
      const sum = rest.reduce((s, r) => s + BigInt(r[col('amount_micros')]), BigInt(opening[col('amount_micros')]));
      expect(BigInt(closing[col('amount_micros')])).toBe(sum);
      expect(sum).toBe(money.balance);
      expect(rest[1][col('cache_write_1h_micros')]).toBe('1200.000000');
      expect(rest[1][col('cached_input_tokens')]).toBe('1200');
    }
  });

  it('gives a key holder its own account only, for a period it chooses; bad periods and formats are 400', async () => {
    const { accountId, key, money } = await monthOfMovements();
    const other = await new AdminClient(suite.gw.url).createAccount({ creditsUsd: '7' });
    await pinTo(other.accountId, THIS_MONTH);
    const own = await statement(`/v1/usage/statement?${period(THIS_MONTH)}`, { authorization: `Bearer ${key}` });
    expect(own.status).toBe(200);
    const body = JSON.parse(own.text);
    expect(body).toMatchObject({ account_id: accountId, movement_count: 3, closing_balance_micros: String(money.balance) });
    const theirs = JSON.parse((await statement(`/v1/usage/statement?${period(THIS_MONTH)}`, { authorization: `Bearer ${other.key}` })).text);
    expect(theirs).toMatchObject({ account_id: other.accountId, opening_balance_micros: '0', closing_balance_micros: '7000000', movement_count: 1 });
    // No period: the UTC month so far, which holds none of the pinned movements; it still closes at the balance.
    const current = JSON.parse((await statement('/v1/usage/statement', { authorization: `Bearer ${key}` })).text);
    const end = new Date(Date.parse(current.to) - 1);
    expect(current.from).toBe(new Date(Date.UTC(end.getUTCFullYear(), end.getUTCMonth(), 1)).toISOString());
    expect(current).toMatchObject({ account_id: accountId, movement_count: 0, opening_balance_micros: String(money.balance), closing_balance_micros: String(money.balance) });
    // Last month alone: its top-up and its charge, closing where this month opens.
    const previous = JSON.parse((await statement(`/v1/usage/statement?${period(LAST_MONTH)}`, { authorization: `Bearer ${key}` })).text);
    expect(previous.movements.map((m: any) => m.kind)).toEqual(['top_up', 'charge']);
    expect(previous.closing_balance_micros).toBe(body.opening_balance_micros);
    const bad = await statement('/v1/usage/statement?format=xml', { authorization: `Bearer ${key}` });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text).error).toMatchObject({ code: 'invalid_request_error', param: 'format' });
    expect((await statement('/v1/usage/statement?from=2026-02-01&to=2026-01-01', { authorization: `Bearer ${key}` })).status).toBe(400);
    expect((await statement('/v1/usage/statement', {})).status).toBe(401);
    expect((await admin('/00000000-0000-4000-8000-000000000000/statement')).status).toBe(404);
  });

  it('streams a long period page by page: 1,200 movements, all there, still reconciled', async () => {
    const { accountId } = await new AdminClient(suite.gw.url).createAccount({ creditsUsd: '1' });
    await suite.db.query(
      `INSERT INTO ledger_entries (account_id, kind, amount_micros, balance_after_micros)
       SELECT $1, 'top_up', 1, 1000000 + g FROM generate_series(1, 1200) g`,
      [accountId],
    );
    await suite.db.query(`UPDATE accounts SET balance_micros = balance_micros + 1200 WHERE id = $1`, [accountId]);
    await pinTo(accountId, THIS_MONTH);
    const body = JSON.parse((await admin(`/${accountId}/statement?${period(THIS_MONTH)}`)).text);
    expect(body.movement_count).toBe(1201);
    expect(body.movements).toHaveLength(1201);
    expect(body.closing_balance_micros).toBe('1001200');
    expect(new Set(body.movements.map((m: any) => m.id)).size).toBe(1201);
  });
});
