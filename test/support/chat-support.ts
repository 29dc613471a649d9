import OpenAI from 'openai';
import { DataSource } from 'typeorm';
import { classPriceFields, ClassPrices, ClassTokens, costMicrosByClass, holdMicrosOf } from './cost-oracle';
import { AdminClient } from './admin-client';
import { fakeOpenAiProvider, FakeReply, FakeUpstream, startFakeUpstream } from './fake-upstream';
import { RawConfig, startTestApp, TestApp, TestAppOptions } from './test-app';

/** A chat model of the test catalog, served by a fake upstream. Prices in USD per million tokens. */
export interface PricedModel extends ClassPrices {
  id: string;
  maxOutput: number;
}

export type { ClassPrices, ClassTokens };
export { classPriceFields };

export interface FakeProviderOptions {
  /** Provider name in the config (several fakes can be configured side by side). */
  name?: string;
  requestMs?: number;
  connectMs?: number;
  /** Chat burst limit; high by default so that only the burst tests meet it. */
  burst?: { requests: number; window_s: number };
  /** The fake's reply in every test: before each, the fake is reset and given a copy of it. */
  reply?: FakeReply;
}

/** The catalog's upstream_model for a test model: distinct from the id, to show the mapping. */
export const upstreamModelOf = (model: PricedModel) => `upstream-${model.id}`;

/** A config edit that adds an openai-compatible provider at `baseUrl` serving `models`. */
export function withFakeProvider(baseUrl: string, models: PricedModel[], options: FakeProviderOptions = {}) {
  const name = options.name ?? 'fake';
  return (raw: RawConfig) => {
    raw.providers[name] = { ...fakeOpenAiProvider(baseUrl, options.requestMs), timeouts: { connect_ms: options.connectMs ?? 1000, request_ms: options.requestMs ?? 10_000 } };
    for (const m of models) raw.catalog.push(chatCatalogEntry(m, { provider: name, upstream_model: upstreamModelOf(m) }));
    raw.limits.chat_burst = options.burst ?? { requests: 100_000, window_s: 1 };
  };
}

/** The catalog's chat entry of `m` with its prices, served as `serving` says (`provider` and `upstream_model`, or `deployments`). */
export function chatCatalogEntry(m: PricedModel, serving: Record<string, unknown>): Record<string, unknown> {
  return {
    id: m.id,
    kind: 'chat',
    ...serving,
    input_price_per_million: m.input,
    output_price_per_million: m.output,
    ...classPriceFields(m),
    max_output_tokens: m.maxOutput,
  };
}

/**
 * The documented charge (docs/billing.md) of plain tokens: prompt × input price + completion × output price,
 * computed exactly in pico-USD and rounded up once to the micro-dollar.
 */
export function costMicros(model: Pick<PricedModel, 'input' | 'output'>, promptTokens: number, completionTokens: number): bigint {
  return classCostMicros(model, { prompt: promptTokens, completion: completionTokens });
}

/** The documented charge of a request by token class: the tests' oracle (cost-oracle.ts). */
export function classCostMicros(model: ClassPrices, tokens: ClassTokens): bigint {
  return costMicrosByClass(model, tokens);
}

/** The hold of a chat request with `messages` and an output allowance: the tests' oracle (cost-oracle.ts). */
export function holdMicros(model: ClassPrices, messages: unknown[], allowance: number): bigint {
  return holdMicrosOf(model, messages, allowance);
}

export function sdk(gw: TestApp, key: string): OpenAI {
  return new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
}

export function usd(micros: bigint): string {
  return `${micros / 1_000_000n}.${(micros % 1_000_000n).toString().padStart(6, '0')}`;
}

export interface MoneyState {
  balance: bigint;
  reserved: bigint;
  ledgerSum: bigint;
  charges: { amount: bigint; requestId: string }[];
  openHolds: number;
}

/**
 * The account's money as stored: balance, reserved, the ledger and its charges, open holds. Chat
 * requests settle just after their response is sent, so this waits (up to `timeoutMs`) until the
 * account holds nothing before reading it.
 */
export async function moneyOf(db: DataSource, accountId: string, timeoutMs = 5000): Promise<MoneyState> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const [open] = await db.query(`SELECT count(*)::int AS n FROM holds WHERE account_id = $1`, [accountId]);
    if (open.n === 0) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  const [account] = await db.query(`SELECT balance_micros, reserved_micros FROM accounts WHERE id = $1`, [accountId]);
  const ledger: { kind: string; amount_micros: string; request_id: string | null }[] = await db.query(
    `SELECT kind, amount_micros, request_id FROM ledger_entries WHERE account_id = $1 ORDER BY id`,
    [accountId],
  );
  const [holds] = await db.query(`SELECT count(*)::int AS n FROM holds WHERE account_id = $1`, [accountId]);
  return {
    balance: BigInt(account.balance_micros),
    reserved: BigInt(account.reserved_micros),
    ledgerSum: ledger.reduce((sum, row) => sum + BigInt(row.amount_micros), 0n),
    charges: ledger.filter((r) => r.kind === 'charge').map((r) => ({ amount: -BigInt(r.amount_micros), requestId: r.request_id! })),
    openHolds: holds.n,
  };
}

export interface UsageRow {
  request_id: string;
  model: string | null;
  endpoint: string;
  status: number;
  error_code: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  cache_write_1h_tokens: number;
  reasoning_tokens: number;
  audio_input_tokens: number;
  audio_output_tokens: number;
  cost_micros: string;
  streamed: boolean;
}

export async function usageRowsOf(db: DataSource, accountId: string): Promise<UsageRow[]> {
  return db.query(
    `SELECT request_id, model, endpoint, status, error_code, prompt_tokens, completion_tokens, cached_tokens, cache_write_tokens,
            cache_write_1h_tokens, reasoning_tokens, audio_input_tokens, audio_output_tokens, cost_micros, streamed
       FROM usage_records WHERE account_id = $1 ORDER BY id`,
    [accountId],
  );
}

/**
 * The account's usage records once there are `count` of them (failed requests are recorded when their
 * response closes, just after the client has its answer); fails if more than `count` appear.
 */
export async function waitForUsageRows(db: DataSource, accountId: string, count: number, timeoutMs = 5000): Promise<UsageRow[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await usageRowsOf(db, accountId);
    if (rows.length >= count || Date.now() > deadline) {
      // A late duplicate would show up here: give it a moment before judging the count.
      await new Promise((r) => setTimeout(r, 100));
      return usageRowsOf(db, accountId);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * The account's single charge is `cost` (balance = credits − cost = the ledger's sum, nothing held), and its one usage
 * record (status 200, that cost) matches `row` and names that charge's request.
 */
export async function expectOneCharge(db: DataSource, accountId: string, expected: { cost: bigint; credits: bigint; row: Partial<Record<keyof UsageRow, unknown>> }): Promise<void> {
  const { cost, credits } = expected;
  const money = await moneyOf(db, accountId);
  expect(money).toMatchObject({ balance: credits - cost, reserved: 0n, ledgerSum: credits - cost, openHolds: 0 });
  expect(money.charges.map((c) => c.amount)).toEqual([cost]);
  const rows = await waitForUsageRows(db, accountId, 1);
  expect(rows).toEqual([expect.objectContaining({ status: 200, cost_micros: String(cost), ...expected.row })]);
  expect(rows[0].request_id).toBe(money.charges[0].requestId);
}

/** POSTs a raw body to /v1/chat/completions (for what the SDK would refuse to send). */
export function postChat(gw: Pick<TestApp, 'url'>, key: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  return postJson(gw, key, '/v1/chat/completions', body, init);
}

/** POSTs `body` (JSON, or a string sent as it is) with the key to `path`. */
export function postJson(gw: Pick<TestApp, 'url'>, key: string, path: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  return fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...init,
  });
}

/** The `data:` payloads of an SSE body, in order (`[DONE]` included as the string). */
export async function readSseData(res: Response): Promise<string[]> {
  const text = await res.text();
  return parseSseData(text);
}

export function parseSseData(text: string): string[] {
  return text
    .split(/\r?\n\r?\n/)
    .map((event) =>
      event
        .split(/\r?\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(line.startsWith('data: ') ? 6 : 5))
        .join('\n'),
    )
    .filter((data) => data.length > 0);
}

export interface GatewaySuite {
  gw: TestApp;
  admin: AdminClient;
  db: DataSource;
}

/**
 * Registers the hooks of a describe block that runs against one gateway started with `options` (by default the
 * embedded config: dev-echo, local audio); the returned object is filled in by its beforeAll.
 */
export function useGateway(options: TestAppOptions = {}): GatewaySuite {
  const suite = {} as GatewaySuite;
  beforeAll(async () => {
    suite.gw = await startTestApp(options);
    suite.admin = new AdminClient(suite.gw.url);
    suite.db = suite.gw.app.get(DataSource);
  });
  afterAll(() => suite.gw?.close());
  return suite;
}

export interface FakeGatewaySuite {
  fake: FakeUpstream;
  gw: TestApp;
  admin: AdminClient;
  db: DataSource;
}

/** A config edit, as startTestApp takes it. */
export type ConfigEdit = (raw: RawConfig) => void;

/**
 * Registers the hooks of a describe block that runs against a gateway and a fake upstream, the gateway
 * configured by `configFor` from the fake's URL; the returned object is filled in by its beforeAll.
 */
export function useGatewayWithFake(configFor: (fakeUrl: string) => ConfigEdit | Promise<ConfigEdit>): FakeGatewaySuite {
  const suite = {} as FakeGatewaySuite;
  beforeAll(async () => {
    suite.fake = await startFakeUpstream();
    suite.gw = await startTestApp({ config: await configFor(suite.fake.url) });
    suite.admin = new AdminClient(suite.gw.url);
    suite.db = suite.gw.app.get(DataSource);
  });
  afterAll(async () => {
    await suite.gw?.close();
    await suite.fake?.close();
  });
  return suite;
}

/** useGatewayWithFake for a gateway whose chat `models` are served by the fake upstream. */
export function useFakeGateway(models: PricedModel[], options: FakeProviderOptions = {}): FakeGatewaySuite {
  const suite = useGatewayWithFake((url) => withFakeProvider(url, models, options));
  const reply = options.reply;
  if (reply) {
    beforeEach(() => {
      suite.fake.resetState();
      suite.fake.reply = structuredClone(reply);
    });
  }
  return suite;
}
