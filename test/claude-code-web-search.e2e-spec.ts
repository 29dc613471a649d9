import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { chatCatalogEntry, moneyOf, PricedModel } from './support/chat-support';
import { ClientCapture, startClientCapture } from './support/client-capture';
import { costMicrosByClass } from './support/cost-oracle';
import { AnthropicReply, AnthropicUsage, FakeAnthropic } from './support/fake-anthropic';
import { offeredWebSearch } from './support/fake-anthropic-search';
import { CLAUDE, CliRun, platform, readmeLines, runLines, runnable } from './support/real-cli';
import { anthropic } from './support/messages-support';
import { keyedProvider, useUpstreamGateway } from './support/upstream-gateway';

/**
 * Claude Code's web search through the gateway (issue 45, DESIGN.md section 12.2): the real CLI (test/clients), run
 * from README.md's lines, against a catalog model served by an `anthropic` upstream (the fake Anthropic) that prices
 * the web search tool. Claude Code 2.1.332's WebSearch tool makes a /v1/messages request of its own ("Perform a web
 * search for the query: …"), offering `{type: "web_search_20250305", name: "web_search", max_uses: 8}` with
 * `tool_choice` `auto` on its default model (`{type: "tool", name: "web_search"}` on claude-sonnet-4-6, with thinking
 * disabled); that server tool is served, not withdrawn, and the request is charged its tokens plus $0.01 a search.
 * The same through the SDK, JSON, with a search past `max_uses`.
 */
const KEY_ENV = 'CLAUDE_CODE_WEB_SEARCH_TEST_KEY';
const PRICES = { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75, cacheWrite1h: 6 };
const MODEL: PricedModel = { id: 'claude-web', ...PRICES, maxOutput: 64000 };
/** The catalog's fee per search, in µUSD: `tool_fees: {web_search: 0.01}`. */
const SEARCH_FEE_MICROS = 10_000n;
const CREDITS_MICROS = 10_000_000n;
const QUERY = 'gateway 2026 release notes';
const RESULTS = [
  { url: 'https://example.com/gateway/release-notes', title: 'Gateway release notes', page_age: 'May 1, 2026' },
  { url: 'https://example.org/gateway-pricing', title: 'Charging what the upstream charges' },
];
const SUMMARY = 'The gateway now charges what the upstream charges, web searches included.';
const FINAL = 'According to the release notes, the gateway now bills each web search at the upstream price.';
const TOOL_SEARCH_ID = 'toolu_01FakeToolSearch';
const WEB_SEARCH_ID = 'toolu_01FakeWebSearch';

if (!runnable) {
  console.warn(`\n!!! test/claude-code-web-search: SKIPPED. Claude Code ships no binary for ${platform}; its web search cannot be run here. !!!\n`);
}

/** The tool_use ids the last user turn answers with tool_result blocks. */
function answeredToolUses(body: any): Set<string> {
  const last = Array.isArray(body?.messages) ? body.messages.at(-1) : undefined;
  const blocks: any[] = Array.isArray(last?.content) ? last.content : [];
  return new Set(blocks.filter((b) => b?.type === 'tool_result').map((b) => String(b.tool_use_id)));
}

/**
 * The model's side of the session, as Claude (the fake) plays it: WebSearch is one of Claude Code's deferred tools,
 * so the model loads it with ToolSearch, then calls it; Claude Code runs it as a request of its own that offers the
 * web search server tool (the fake searches: `webSearch`), and hands the results back; the model answers. Any other
 * request (a title, say) gets the default reply.
 */
function claudeTurn(body: any): AnthropicReply | undefined {
  if (offeredWebSearch(body)) return { text: SUMMARY };
  const answered = answeredToolUses(body);
  if (answered.has(WEB_SEARCH_ID)) return { text: FINAL };
  if (answered.has(TOOL_SEARCH_ID)) return { text: '', toolUses: [{ id: WEB_SEARCH_ID, name: 'WebSearch', input: { query: QUERY } }] };
  const tools: any[] = Array.isArray(body?.tools) ? body.tools : [];
  if (tools.some((t) => t?.name === 'ToolSearch')) return { text: '', toolUses: [{ id: TOOL_SEARCH_ID, name: 'ToolSearch', input: { query: 'select:WebSearch' } }] };
  return undefined;
}

/** A request's charge for its tokens at the model's class prices, as the fake counted them (cost-oracle.ts). */
function tokenCost(usage: AnthropicUsage): bigint {
  const cacheWrite = usage.cache_creation_input_tokens;
  return costMicrosByClass(PRICES, {
    prompt: usage.input_tokens + usage.cache_read_input_tokens + cacheWrite,
    completion: usage.output_tokens,
    cached: usage.cache_read_input_tokens,
    cacheWrite,
    cacheWrite1h: usage.cache_creation.ephemeral_1h_input_tokens,
  });
}

describe("Claude Code's web search through the gateway, charged per search (issue 45)", () => {
  let fake: FakeAnthropic, admin: AdminClient, db: DataSource;
  let capture: ClientCapture;
  let work: string;
  const suite = useUpstreamGateway({
    fakes: async () => ({ fake: await new FakeAnthropic().start() }),
    config: (fakes, raw) => {
      raw.providers.claude = keyedProvider('anthropic', fakes.fake.url, KEY_ENV, 'sk-ant-fake-key');
      // Every model Claude Code asks for (its default, its haiku) is this entry's: the shipped catalog's `claude-*` on dev-echo goes.
      for (const entry of raw.catalog as { aliases?: string[] }[]) if (entry.aliases) entry.aliases = entry.aliases.filter((a) => a !== 'claude-*');
      raw.catalog.push({ ...chatCatalogEntry(MODEL, { provider: 'claude', upstream_model: 'claude-sonnet-4-6' }), aliases: ['claude-*'], tool_fees: { web_search: 0.01 } });
    },
    ready: (started) => ({ fakes: { fake }, admin, db } = started),
  });

  beforeAll(async () => {
    if (runnable && !existsSync(CLAUDE)) throw new Error(`${CLAUDE} is missing: install the real clients with \`npm ci --prefix test/clients\` (.ci/run does).`);
    // A recording pass-through between the CLI and the gateway: what Claude Code sent and what it got.
    capture = await startClientCapture(suite.gw.url);
    work = mkdtempSync(join(tmpdir(), 'claude-web-search-'));
  });
  afterAll(async () => {
    await capture?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** The README's lines with WebSearch allowed (`-p` runs no tool that asks for permission), in a fresh HOME. */
  function claude(key: string, prompt: string): Promise<CliRun> {
    const home = join(work, `home-${Date.now()}`);
    mkdirSync(home, { recursive: true });
    const lines = `${readmeLines('sh claude', capture.url, prompt).trimEnd()} --allowedTools WebSearch\n`;
    return runLines(lines, { HOME: home, KEY: key }, work);
  }

  (runnable ? it : it.skip)('serves the web search tool to Anthropic, answers with what it found, and charges its tokens plus $0.01 a search', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    fake.webSearch = { queries: [QUERY], results: RESULTS };
    fake.replyFor = claudeTurn;
    const run = await claude(key, 'Search the web: what did the gateway ship in 2026?');
    const report = () => `exit ${run.code}\nstdout: ${run.stdout.slice(-2000)}\nstderr: ${run.stderr.slice(-2000)}\nexchanges:\n${capture.summary()}`;
    expect({ code: run.code, answered: run.stdout.includes(FINAL) }).toEqual({ code: 0, answered: true });

    // What Claude Code's WebSearch sent reached Anthropic as sent: the server tool kept, forced, nothing named as ignored.
    const messages = fake.requests.filter((r) => r.path === '/v1/messages');
    const searches = messages.filter((r) => offeredWebSearch(r.body));
    expect(searches).toHaveLength(1);
    const [search] = searches;
    const sent = capture.exchanges.find((e) => e.path.startsWith('/v1/messages') && offeredWebSearch(e.body));
    if (!sent) throw new Error(`Claude Code's search request did not pass the gateway:\n${report()}`);
    expect(sent.status).toBe(200);
    expect(sent.responseHeaders['x-gateway-ignored-params']).toBeUndefined();
    expect(search.body).toEqual({ ...sent.body, model: 'claude-sonnet-4-6' });
    expect(search.body).toMatchObject({ stream: true, tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 8 }] });
    expect(search.answered!.usage.server_tool_use).toEqual({ web_search_requests: 1, web_fetch_requests: 0 });
    // The results came back to Claude Code, which handed them to the model.
    const final = messages.find((r) => answeredToolUses(r.body).has(WEB_SEARCH_ID));
    expect(JSON.stringify(final?.body.messages.at(-1))).toContain(RESULTS[0].url);

    // The charge: every request's tokens at the class prices, and the search request's one search at $0.01.
    const expected = messages.map((r) => tokenCost(r.answered!.usage) + BigInt(r.answered!.usage.server_tool_use?.web_search_requests ?? 0) * SEARCH_FEE_MICROS);
    const money = await moneyOf(db, accountId);
    const total = expected.reduce((a, b) => a + b, 0n);
    const sorted = (amounts: bigint[]) => [...amounts].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    expect(sorted(money.charges.map((c) => c.amount))).toEqual(sorted(expected));
    expect(money).toMatchObject({ balance: CREDITS_MICROS - total, ledgerSum: CREDITS_MICROS - total, reserved: 0n, openHolds: 0 });
    const searchCost = tokenCost(search.answered!.usage) + SEARCH_FEE_MICROS;
    const [row] = await db.query(`SELECT request_id, cost_micros, tool_uses FROM usage_records WHERE account_id = $1 AND tool_uses IS NOT NULL`, [accountId]);
    expect(row).toMatchObject({ request_id: sent.responseHeaders['x-request-id'], cost_micros: String(searchCost), tool_uses: { web_search: { uses: 1, micros: '10000' } } });
    expect(money.charges.find((c) => c.requestId === row.request_id)?.amount).toBe(searchCost);
  }, 150_000);

  it('charges a JSON answer its searches within max_uses, through the SDK: the search past max_uses is not billed', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    fake.webSearch = { queries: ['one', 'two', 'three'], results: RESULTS };
    const message = await anthropic(suite.gw, key).messages.create({
      model: 'claude-any-name',
      max_tokens: 1024,
      tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 2 }],
      messages: [{ role: 'user', content: 'Search three times.' }],
    });
    const [sent] = fake.requests;
    expect(sent.body.tools).toEqual([{ type: 'web_search_20250305', name: 'web_search', max_uses: 2 }]);
    expect(message.usage.server_tool_use).toEqual({ web_search_requests: 2, web_fetch_requests: 0 });
    expect(message.content.filter((b) => b.type === 'web_search_tool_result')).toHaveLength(3);
    const cost = tokenCost(sent.answered!.usage) + 2n * SEARCH_FEE_MICROS;
    const money = await moneyOf(db, accountId);
    expect(money.charges.map((c) => c.amount)).toEqual([cost]);
    expect(money).toMatchObject({ balance: CREDITS_MICROS - cost, reserved: 0n, openHolds: 0 });
    expect((message.usage as unknown as { cost: number }).cost).toBe(Number(cost) / 1e6);

    // The statement and /v1/usage show the searches and their fees beside the token classes: together, the charge.
    const auth = { headers: { authorization: `Bearer ${key}` } };
    const statement: any = await (await fetch(`${suite.gw.url}/v1/usage/statement`, auth)).json();
    const charge = statement.movements.find((m: { kind: string }) => m.kind === 'charge');
    expect(charge.micros_by_class['tool:web_search']).toBe('20000.000000');
    const picos = Object.entries(charge.micros_by_class as Record<string, string>)
      .filter(([name]) => !name.startsWith('tool:'))
      .reduce((sum, [, micros]) => sum + BigInt(micros.replace('.', '')), 0n);
    expect((picos + 999_999n) / 1_000_000n + 2n * SEARCH_FEE_MICROS).toBe(cost);
    const usage: any = await (await fetch(`${suite.gw.url}/v1/usage`, auth)).json();
    expect(usage.totals.tool_uses).toEqual({ web_search: { uses: 2, cost_usd: '0.020000' } });
    expect(usage.latest.find((r: { endpoint: string }) => r.endpoint === '/v1/messages').tool_uses).toEqual({ web_search: { uses: 2, cost_usd: '0.020000' } });
  });

  it('holds the fees of the searches a request may run: max_uses, else tool_hold_uses (10)', async () => {
    // About $0.016 of tokens (a short prompt, 1,024 output tokens at $15 per million) and $0.10 of searches.
    const { accountId, key } = await admin.createAccount({ creditsUsd: '0.05' });
    fake.webSearch = { queries: ['one'], results: RESULTS };
    const ask = (tool: Record<string, unknown> | null) => ({
      model: 'claude-any-name',
      max_tokens: 1024,
      ...(tool ? { tools: [{ type: 'web_search_20250305', name: 'web_search', ...tool }] } : {}),
      messages: [{ role: 'user', content: 'Search once.' }],
    });
    const refused = await fetch(`${suite.gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify(ask({})),
    });
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as any).error.type).toBe('billing_error');
    expect(fake.requests).toHaveLength(0);
    // Two searches at most: $0.02 held for them, which the balance covers.
    const message = await anthropic(suite.gw, key).messages.create(ask({ max_uses: 2 }) as any);
    expect(message.usage.server_tool_use).toEqual({ web_search_requests: 1, web_fetch_requests: 0 });
    const cost = tokenCost(fake.requests[0].answered!.usage) + SEARCH_FEE_MICROS;
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 50_000n - cost, reserved: 0n, openHolds: 0 });
  });
});
