import { countTokens, decode, encode } from 'gpt-tokenizer';
import { O200K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/cjs/encodingParams/constants';
import { execFileSync } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { ChatFunctionDefinition, ChatTool } from './chat-contract';
import { countPromptTokens, countTextTokens, countToolCallTokens, tokenPrefix, toolDefinitions } from './token-count';
import { MAX_PIECE_LENGTH, tokenPieces } from './token-pieces';

const ROOT = join(__dirname, '../..');
const PLAIN = { disallowedSpecial: new Set<string>() };

const CORPUS: Record<string, string> = {
  'prose (docs/billing.md)': readFileSync(join(ROOT, 'docs/billing.md'), 'utf8'),
  'prose (docs/chat.md)': readFileSync(join(ROOT, 'docs/chat.md'), 'utf8'),
  'code (chat.service.ts)': readFileSync(join(ROOT, 'src/chat/chat.service.ts'), 'utf8'),
  'code (dashboard.js)': readFileSync(join(ROOT, 'src/dashboard/assets/dashboard.js'), 'utf8'),
  'JSON (package-lock.json)': readFileSync(join(ROOT, 'package-lock.json'), 'utf8').slice(0, 200_000),
  Chinese: '人工智能网关负责把请求转发给上游模型，并按实际用量向账户收费。每个请求在调用上游之前都会预留额度；响应结束后再结算。'.repeat(20),
  Japanese: '東京の天気は晴れです。明日は雨が降るかもしれませんので、傘を持って行ってください。ゲートウェイはトークンを数えます。'.repeat(20),
  Korean: '안녕하세요. 이 게이트웨이는 요청마다 토큰을 세고 사용량에 따라 요금을 청구합니다. 감사합니다!'.repeat(20),
  Thai: 'ภาษาไทยไม่มีการเว้นวรรคระหว่างคำทำให้ประโยคยาวเป็นชิ้นเดียวกันได้ง่ายมาก '.repeat(20),
  'Russian and Arabic': 'Быстрая коричневая лиса перепрыгивает через ленивую собаку. مرحبا بالعالم، هذه بوابة للذكاء الاصطناعي. '.repeat(20),
  emoji: 'Deploy done 🚀🎉 — family 👨‍👩‍👧‍👦, flags 🇩🇪🇯🇵, skin tones 👍🏽👋🏿, keycap 1️⃣ ✅❌ '.repeat(20),
  'markdown table': `| name | value |\n|${'-'.repeat(200)}|${'-'.repeat(250)}|\n| a | b |\n`,
  'special-token text': 'Ignore <|endoftext|> and <|fim_prefix|> markers; they are text.',
};

const randomLetters = (n: number) => Array.from(randomBytes(n), (b) => String.fromCharCode(97 + (b % 26))).join('');
const randomBase64 = (n: number) => randomBytes(n).toString('base64').slice(0, n);
const randomCjk = (n: number) => Array.from({ length: n }, () => String.fromCharCode(0x4e00 + randomInt(20000))).join('');
const repeatedEmoji = (n: number) => '😀'.repeat(n / 2);

describe('countTextTokens', () => {
  it.each(Object.entries(CORPUS))('gives the reference o200k count for %s', async (_, text) => {
    expect(await countTextTokens(text)).toBe(countTokens(text, PLAIN));
  });

  it('counts text that looks like special tokens as plain text instead of throwing', async () => {
    expect(() => countTokens('<|endoftext|>')).toThrow();
    expect(await countTextTokens('<|endoftext|>')).toBe(encode('<|endoftext|>', PLAIN).length);
  });

  it('counts a piece longer than the slice length within one token per slice of the reference, and never above its bytes', async () => {
    for (const text of [randomLetters(3000), 'ab'.repeat(1500), '-'.repeat(3000), randomCjk(1500), repeatedEmoji(3000)]) {
      const slices = Math.ceil(text.length / (MAX_PIECE_LENGTH - 1));
      const counted = await countTextTokens(text);
      expect(Math.abs(counted - countTokens(text))).toBeLessThanOrEqual(slices);
      expect(counted).toBeLessThanOrEqual(Buffer.byteLength(text));
    }
  });

  it('takes time linear in the input: 10× the text costs at most ~15× the time', async () => {
    for (const [name, make] of [
      ['one long word', randomLetters],
      ['random base64', randomBase64],
      ['repeated emoji', repeatedEmoji],
      ['random CJK', randomCjk],
    ] as const) {
      // Sizes that keep the whole case within minutes on a slow, loaded 2-core machine; the ratio is what is checked.
      const small = await bestTimeMs(() => make(20_000));
      const large = await bestTimeMs(() => make(200_000));
      const ratio = large / Math.max(small, 1);
      expect([name, ratio <= 15 ? 'linear' : `${small.toFixed(0)} ms → ${large.toFixed(0)} ms`]).toEqual([name, 'linear']);
    }
  }, 300_000);
});

describe('tokenPieces', () => {
  it('gives every pre-tokenizer piece of ordinary text unchanged', () => {
    const text = CORPUS['code (chat.service.ts)'];
    expect([...tokenPieces(text)]).toEqual([...text.matchAll(O200K_TOKEN_SPLIT_REGEX)].map((m) => m[0]));
  });

  it.each([
    ['one long word', 'a'.repeat(5000)],
    ['repeated emoji', '😀'.repeat(2000)],
    ['emoji after an odd prefix', 'x' + '😀'.repeat(2000)],
    ['random base64', randomBase64(5000)],
  ])('cuts %s into slices of at most the slice length that join back to the text, never inside a surrogate pair', (_, text) => {
    const pieces = [...tokenPieces(text)];
    expect(pieces.join('')).toBe(text);
    for (const piece of pieces) {
      expect(piece.length).toBeGreaterThan(0);
      expect(piece.length).toBeLessThanOrEqual(MAX_PIECE_LENGTH);
      expect(piece).toBe(Buffer.from(piece, 'utf8').toString('utf8')); // no lone surrogate
    }
  });

  it('cuts a long run into full slices', () => {
    expect([...tokenPieces('a'.repeat(MAX_PIECE_LENGTH * 2 + 1))].map((p) => p.length)).toEqual([MAX_PIECE_LENGTH, MAX_PIECE_LENGTH, 1]);
  });
});

describe('tokenPrefix', () => {
  const text = CORPUS['prose (docs/billing.md)'].slice(0, 2000);

  it('cuts ordinary text where the reference tokens are cut', async () => {
    for (const limit of [0, 1, 4, 57, 300]) {
      expect(await tokenPrefix(text, limit)).toEqual({ text: decode(encode(text).slice(0, limit)), tokens: limit, cut: true });
    }
  });

  it('keeps a text that fits whole', async () => {
    const tokens = countTokens(text);
    expect(await tokenPrefix(text, tokens)).toEqual({ text, tokens, cut: false });
  });
});

describe('countPromptTokens', () => {
  it("counts OpenAI's 3 tokens per message and 3 for the reply around every field", async () => {
    const messages = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', name: 'ann', content: [{ type: 'text', text: 'Hello ' }, { type: 'text', text: 'there' }] },
    ];
    const expected = 3 + 3 + countTokens('system') + countTokens('Be brief.') + 3 + countTokens('user') + countTokens('ann') + countTokens('Hello there');
    expect(await countPromptTokens(messages)).toBe(expected);
  });

  it('counts the tool definitions as their JSON text (tools, and the legacy functions)', async () => {
    const messages = [{ role: 'user', content: 'Weather?' }];
    const tools: ChatTool[] = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    const functions: ChatFunctionDefinition[] = [{ name: 'get_time', parameters: { type: 'object', properties: {} } }];
    const plain = await countPromptTokens(messages);
    expect(await countPromptTokens(messages, toolDefinitions({ tools }))).toBe(plain + countTokens(JSON.stringify(tools)));
    expect(await countPromptTokens(messages, toolDefinitions({ tools, functions }))).toBe(
      plain + countTokens(JSON.stringify(tools)) + countTokens(JSON.stringify(functions)),
    );
    // A client's `tools: null`, outside the contract's types.
    expect(toolDefinitions({ tools: null as unknown as ChatTool[] })).toEqual([]);
  });
});

describe('countToolCallTokens', () => {
  it("counts the calls' names and arguments as one text, in order, as the produced text of an answer is counted", async () => {
    const calls = [
      { name: 'get_weather', arguments: '{"city":"Köln","unit":"celsius"}' },
      { name: 'get_time', arguments: '{}' },
    ];
    expect(await countToolCallTokens(calls)).toBe(countTokens('get_weather{"city":"Köln","unit":"celsius"}get_time{}'));
    expect(await countToolCallTokens([])).toBe(0);
  });
});

/**
 * The best of three runs, each on fresh text (the tokenizer caches merges of pieces it has seen), in this process's
 * CPU time: the work the count costs, which other processes on a loaded machine do not stretch as they stretch the
 * clock (a CI run read 439 ms → 6,695 ms of wall time at a load of 12 on 2 cores).
 */
async function bestTimeMs(make: () => string): Promise<number> {
  let best = Infinity;
  for (let run = 0; run < 3; run++) {
    const text = make();
    const start = process.cpuUsage();
    await countTextTokens(text);
    const used = process.cpuUsage(start);
    best = Math.min(best, (used.user + used.system) / 1000);
  }
  return best;
}

describe('loading the tokenizer', () => {
  /** Whether a fresh Node process has gpt-tokenizer's o200k tables in memory after `script` (run in the project). */
  const tablesLoadedAfter = (script: string): boolean =>
    execFileSync(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', `${script}.then(() => process.stdout.write(String(Object.keys(require.cache).some((f) => f.includes('bpeRanks')))))`], {
      cwd: ROOT,
      encoding: 'utf8',
    }) === 'true';

  it('waits for the first count: the application module alone leaves the tables unloaded (~60 MB of RSS)', () => {
    expect(tablesLoadedAfter(`Promise.resolve(require('./src/app.module'))`)).toBe(false);
    expect(tablesLoadedAfter(`require('./src/providers/token-count').countTextTokens('hello')`)).toBe(true);
  }, 60_000);
});
