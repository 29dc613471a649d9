import { randomBytes } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { DataSource } from 'typeorm';
import { countPromptTokens, countTextTokens, tokenPrefix } from '../src/providers/token-count';
import { AdminClient } from './support/admin-client';
import { costMicros, parseSseData, postChat, readSseData, UsageRow, waitForUsageRows, withFakeProvider } from './support/chat-support';
import { LoopChecks, LoopWatch, watchEventLoop } from './support/event-loop-watch';
import { OwnGateway, startOwnGateway } from './support/own-gateway';
import { testDatabaseUrl } from './support/test-app';

// The gateway counts tokens itself for dev-echo, for an upstream that sends no `usage`, and for a client
// that leaves a stream early. One long "word" once froze the whole process for seconds (BPE merging is
// quadratic in a piece's length): these requests run beside a /healthz poller. The gateway runs as a
// process of its own, as in production: inside jest's module sandbox the tokenizer runs ~1.6x slower,
// and the whole suite's heap adds its collections, so the bounds would measure the test runner.

const DEV_ECHO = { input: 0.5, output: 1.5 }; // config/gateway.yaml
const SILENT = { id: 'silent-upstream', input: 0.5, output: 1.5, maxOutput: 2_000_000 };
const KB = 1024;
const ANSWER_MAX_MS = 10_000;
const PARTIAL_ANSWER = 'Partial answer';
// A request with this tool is answered with a call of it, its arguments the last message (issue 23: counted too).
const ECHO_TOOL = { type: 'function', function: { name: 'echo', parameters: { type: 'object', properties: { text: { type: 'string' } } } } };

/** One "word": a single pre-tokenizer piece. One letter repeated merges most (20 KB froze the process 11–14 s). */
let letters = 0;
const oneLetter = (chars: number) => () => String.fromCharCode(97 + (letters++ % 26)).repeat(chars);
const randomLetters = (chars: number) => () => Array.from(randomBytes(chars), (b) => String.fromCharCode(97 + (b % 26))).join('');
const HOSTILE_WORDS: [string, () => string][] = [
  ['20 KB of one letter', oneLetter(20 * KB)],
  ['100 KB of one letter', oneLetter(100 * KB)],
  ['1 MB of one letter', oneLetter(1024 * KB)],
  ['1 MB of random letters', randomLetters(1024 * KB)],
];

describe('token counting of hostile text does not freeze the gateway', () => {
  let gateway: OwnGateway;
  let gw: { url: string };
  let silent: SilentUpstream;
  let admin: AdminClient;
  let db: DataSource;

  beforeAll(async () => {
    silent = await startSilentUpstream();
    gateway = await startOwnGateway({
      config: (raw) => {
        withFakeProvider(silent.url, [SILENT])(raw);
        raw.catalog.find((m: { id: string }) => m.id === SILENT.id).upstream_model = SILENT.id;
      },
    });
    gw = { url: gateway.url };
    admin = new AdminClient(gw.url);
    db = await new DataSource({ type: 'postgres', url: testDatabaseUrl() }).initialize();
    // Warm up (first requests compile code paths and open pools, the first long word compiles the counting
    // loop: up to 260 ms once, on a loaded machine): the measurements below are of counting only.
    const { key } = await admin.createAccount({ creditsUsd: '20' });
    for (const content of ['warm up', oneLetter(20 * KB)()]) {
      for (const model of ['dev-echo', SILENT.id]) await (await postChat(gw, key, { model, messages: [{ role: 'user', content }], max_tokens: 50 })).text();
    }
  });
  afterAll(async () => {
    await gateway?.stop();
    await db?.destroy();
    await silent?.close();
  });

  describe.each(HOSTILE_WORDS)('a one-word message: %s', (_, oneWord) => {
    it('to dev-echo: /healthz keeps answering, the answer comes in bounded time, the charge is the documented count', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '20' });
      const word = oneWord();
      const messages = [{ role: 'user', content: word }];

      const { result: res, loop, ms } = await watchEventLoop(gw.url, () => postChat(gw, key, { model: 'dev-echo', messages, max_tokens: 50 }));
      expectLoopFree(loop);
      expect(ms).toBeLessThan(ANSWER_MAX_MS);
      expect(res.status).toBe(200);
      const completion = (await res.json()) as ChatAnswer;
      const echo = await tokenPrefix(word, 50);
      expect(completion.choices[0]).toMatchObject({ message: { content: echo.text }, finish_reason: 'length' });
      expect(word.startsWith(echo.text)).toBe(true);

      const promptTokens = await countPromptTokens(messages);
      expect(promptTokens).toBeLessThanOrEqual(Buffer.byteLength(JSON.stringify(messages)) + 3); // the hold's prompt bound
      expect(completion.usage).toMatchObject({ prompt_tokens: promptTokens, completion_tokens: 50 });
      await expectCharged(accountId, { status: 200, promptTokens, completionTokens: 50, price: DEV_ECHO });
    });

    it('streamed by dev-echo: /healthz keeps answering, the stream ends in bounded time with the documented usage', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '20' });
      const word = oneWord();
      const messages = [{ role: 'user', content: word }];
      const body = { model: 'dev-echo', messages, max_tokens: 50, stream: true, stream_options: { include_usage: true } };

      const { result: events, loop, ms } = await watchEventLoop(gw.url, async () => readSseData(await postChat(gw, key, body)));
      expectLoopFree(loop);
      expect(ms).toBeLessThan(ANSWER_MAX_MS);
      expect(events.at(-1)).toBe('[DONE]');
      const promptTokens = await countPromptTokens(messages);
      expect(JSON.parse(events.at(-2)!).usage).toMatchObject({ prompt_tokens: promptTokens, completion_tokens: 50 });
      await expectCharged(accountId, { status: 200, promptTokens, completionTokens: 50, price: DEV_ECHO });
    });

    it('answered by an upstream that sends no usage: the gateway counts prompt and answer without freezing', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '20' });
      const word = oneWord();
      const messages = [{ role: 'user', content: word }];

      const { result: res, loop, ms } = await watchEventLoop(gw.url, () => postChat(gw, key, { model: SILENT.id, messages }));
      expectLoopFree(loop);
      expect(ms).toBeLessThan(ANSWER_MAX_MS);
      expect(res.status).toBe(200);
      const completion = (await res.json()) as ChatAnswer;
      expect(completion.choices[0].message.content).toBe(word); // the silent upstream echoes, without usage
      expect(completion.usage).toBeUndefined();

      const promptTokens = await countPromptTokens(messages);
      const completionTokens = await countTextTokens(word);
      expect(completionTokens).toBeLessThanOrEqual(Buffer.byteLength(word));
      await waitForUsageRows(db, accountId, 1, ANSWER_MAX_MS); // settled (after the answer) in bounded time too
      await expectCharged(accountId, { status: 200, promptTokens, completionTokens, price: SILENT });
    });

    it('answered with a tool call by an upstream that sends no usage: the gateway counts the call without freezing', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '20' });
      const word = oneWord();
      const messages = [{ role: 'user', content: word }];

      const { result: res, loop, ms } = await watchEventLoop(gw.url, () => postChat(gw, key, { model: SILENT.id, messages, tools: [ECHO_TOOL] }));
      expectLoopFree(loop);
      expect(ms).toBeLessThan(ANSWER_MAX_MS);
      expect(res.status).toBe(200);
      const completion = (await res.json()) as ChatAnswer;
      expect(completion.choices[0].message.tool_calls![0].function).toEqual({ name: 'echo', arguments: word });

      const promptTokens = await countPromptTokens(messages, [[ECHO_TOOL]]);
      const completionTokens = await countTextTokens(`echo${word}`);
      await waitForUsageRows(db, accountId, 1, ANSWER_MAX_MS);
      await expectCharged(accountId, { status: 200, promptTokens, completionTokens, price: SILENT });
    });

    it('sent by a client that leaves the stream early: the gateway counts the prompt without freezing', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '20' });
      const word = oneWord();
      const messages = [{ role: 'user', content: word }];
      const abort = new AbortController();

      const { loop } = await watchEventLoop(gw.url, async () => {
        const res = await postChat(gw, key, { model: SILENT.id, messages, stream: true }, { signal: abort.signal });
        expect(res.status).toBe(200);
        await readUntil(res, PARTIAL_ANSWER);
        abort.abort();
        const left = performance.now();
        const [row] = await waitForUsageRows(db, accountId, 1, ANSWER_MAX_MS);
        expect({ settled: row !== undefined, withinBound: performance.now() - left < ANSWER_MAX_MS }).toEqual({ settled: true, withinBound: true });
      });
      expectLoopFree(loop);

      const promptTokens = await countPromptTokens(messages);
      await expectCharged(accountId, { status: 499, promptTokens, completionTokens: await countTextTokens(PARTIAL_ANSWER), price: SILENT });
    });
  });

  it('answered /healthz promptly throughout: the p95 of every poll above', () => {
    loops.expectPromptPolls(100);
  });

  async function expectCharged(accountId: string, expected: { status: number; promptTokens: number; completionTokens: number; price: { input: number; output: number } }) {
    const rows: UsageRow[] = await waitForUsageRows(db, accountId, 1);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      status: expected.status,
      prompt_tokens: expected.promptTokens,
      completion_tokens: expected.completionTokens,
      cost_micros: String(costMicros(expected.price, expected.promptTokens, expected.completionTokens)),
    });
  }
});

/**
 * Counting gives the loop back every 10 ms: the gateway's holds stay far under LOOP_HELD_MAX_MS, which a count
 * without slices breaks (the quadratic tokenizer held the loop 11–14 s on 20 KB of one letter; the linear one
 * held it ~0.75 s on 1 MB of random letters before it gave the loop back).
 */
const loops = new LoopChecks();
const expectLoopFree = (loop: LoopWatch) => loops.expectFree(loop);

interface ChatAnswer {
  choices: { message: { content: string; tool_calls?: { function: { name: string; arguments: string } }[] }; finish_reason: string }[];
  usage?: Record<string, number>;
}

/** Reads an SSE response until its content deltas contain `text`. */
async function readUntil(res: Response, text: string): Promise<void> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let content = '';
  while (!content.includes(text)) {
    const { value, done } = await reader.read();
    if (done) throw new Error('the stream ended before the partial answer');
    buffer += decoder.decode(value, { stream: true });
    for (const data of parseSseData(buffer.slice(0, buffer.lastIndexOf('\n\n') + 2))) content += JSON.parse(data).choices[0]?.delta?.content ?? '';
    buffer = buffer.slice(buffer.lastIndexOf('\n\n') + 2);
  }
}

interface SilentUpstream {
  url: string;
  close(): Promise<void>;
}

/**
 * An OpenAI-compatible upstream that never reports usage: a JSON answer echoes the last message (as the
 * arguments of a call of the request's tool, when it has one); a stream sends PARTIAL_ANSWER and then waits
 * until its client goes away.
 */
async function startSilentUpstream(): Promise<SilentUpstream> {
  const server: Server = createServer((req, res) => void answer(req, res).catch(() => res.destroy()));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  const base = { id: 'chatcmpl-silent', created: Math.floor(Date.now() / 1000), model: String(body.model) };
  if (body.stream !== true) {
    const content = body.messages.at(-1).content;
    const message = body.tools
      ? { role: 'assistant', content: null, tool_calls: [{ id: 'call_echo', type: 'function', function: { name: 'echo', arguments: content } }] }
      : { role: 'assistant', content };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: body.tools ? 'tool_calls' : 'stop' }] }));
    return;
  }
  const event = (delta: Record<string, unknown>) => `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(event({ role: 'assistant', content: '' }));
  res.write(event({ content: PARTIAL_ANSWER }));
}
