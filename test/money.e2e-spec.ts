import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { useGateway } from './support/chat-support';

interface LedgerRow {
  kind: string;
  amount_micros: string;
  balance_after_micros: string;
  request_id: string | null;
}

describe('Exact money round trips', () => {
  let admin: AdminClient, db: DataSource;
  const suite = useGateway();
  beforeAll(() => ({ admin, db } = suite));

  async function newAccount(): Promise<string> {
    return (await admin.request('POST', '/accounts', { name: 'money' })).body.id;
  }

  function ledger(accountId: string): Promise<LedgerRow[]> {
    return db.query(
      `SELECT kind, amount_micros, balance_after_micros, request_id FROM ledger_entries WHERE account_id = $1 ORDER BY id`,
      [accountId],
    );
  }

  async function balanceMicros(accountId: string): Promise<string> {
    const [row] = await db.query(`SELECT balance_micros FROM accounts WHERE id = $1`, [accountId]);
    return row.balance_micros;
  }

  it.each([
    ['the smallest amount, as a number', 0.000001, '0.000001', '1'],
    ['the smallest amount, as a string', '0.000001', '0.000001', '1'],
    ['a large amount with six decimals, as a number', 1234567.891234, '1234567.891234', '1234567891234'],
    ['a large amount with six decimals, as a string', '1234567.891234', '1234567.891234', '1234567891234'],
    ['an amount that binary floating point cannot hold exactly', 0.1, '0.100000', '100000'],
    ['the largest accepted amount', '999999999999.999999', '999999999999.999999', '999999999999999999'],
  ])('tops up %s and reads it back unchanged, with its ledger row', async (_name, amount, shown, micros) => {
    const id = await newAccount();
    const res = await admin.request('POST', `/accounts/${id}/credits`, { amount_usd: amount });
    expect(res.status).toBe(200);
    expect(res.body.credits_usd).toBe(shown);
    expect((await admin.account(id)).credits_usd).toBe(shown);
    expect(await balanceMicros(id)).toBe(micros);
    expect(await ledger(id)).toEqual([{ kind: 'top_up', amount_micros: micros, balance_after_micros: micros, request_id: null }]);
  });

  it('adds 0.000001 and 1234567.891234 to exactly 1234567.891235, the ledger summing to the balance', async () => {
    const id = await newAccount();
    await admin.request('POST', `/accounts/${id}/credits`, { amount_usd: 0.000001 });
    const res = await admin.request('POST', `/accounts/${id}/credits`, { amount_usd: 1234567.891234 });
    expect(res.body.credits_usd).toBe('1234567.891235');
    expect(await ledger(id)).toEqual([
      { kind: 'top_up', amount_micros: '1', balance_after_micros: '1', request_id: null },
      { kind: 'top_up', amount_micros: '1234567891234', balance_after_micros: '1234567891235', request_id: null },
    ]);
    const [{ sum }] = await db.query(`SELECT SUM(amount_micros)::text AS sum FROM ledger_entries WHERE account_id = $1`, [id]);
    expect(sum).toBe(await balanceMicros(id));
  });

  it('adds ten cents ten times to exactly one dollar (no float drift)', async () => {
    const id = await newAccount();
    for (let i = 0; i < 10; i++) await admin.request('POST', `/accounts/${id}/credits`, { amount_usd: 0.1 });
    expect((await admin.account(id)).credits_usd).toBe('1.000000');
  });

  it('keeps every concurrent top-up and its ledger row', async () => {
    const id = await newAccount();
    const results = await Promise.all(
      Array.from({ length: 25 }, () => admin.request('POST', `/accounts/${id}/credits`, { amount_usd: '0.000003' })),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect((await admin.account(id)).credits_usd).toBe('0.000075');
    const rows = await ledger(id);
    expect(rows).toHaveLength(25);
    expect(rows.map((r) => Number(r.balance_after_micros)).sort((a, b) => a - b)).toEqual(Array.from({ length: 25 }, (_, i) => 3 * (i + 1)));
  });

  it.each([
    [0.000001, '0.000001'],
    ['1234567.891234', '1234567.891234'],
    ['999999999999.999999', '999999999999.999999'],
  ])('round-trips a monthly limit of %p exactly', async (limit, shown) => {
    const id = await newAccount();
    const res = await admin.request('PUT', `/accounts/${id}/spending-limit`, { monthly_limit_usd: limit });
    expect(res.status).toBe(200);
    expect(res.body.monthly_limit_usd).toBe(shown);
    expect((await admin.account(id)).monthly_limit_usd).toBe(shown);
  });

  it('refuses a top-up that would take the balance past what the database can hold, with 400 and no change', async () => {
    const id = await newAccount();
    const max = '999999999999.999999';
    // bigint micro-USD holds up to about 9.22 million million USD: the tenth top-up cannot fit.
    for (let i = 0; i < 9; i++) expect((await admin.request('POST', `/accounts/${id}/credits`, { amount_usd: max })).status).toBe(200);
    const res = await admin.request('POST', `/accounts/${id}/credits`, { amount_usd: max });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request_error', param: 'amount_usd' });
    expect((await admin.account(id)).credits_usd).toBe('8999999999999.999991');
    expect(await ledger(id)).toHaveLength(9);
  });
});
