import type * as GptTokenizer from 'gpt-tokenizer';
import { performance } from 'node:perf_hooks';
import type { ChatRequestBody } from './chat-contract';
import { tokenPieces } from './token-pieces';

// OpenAI's chat accounting: every message costs 3 tokens of framing and the reply is primed with 3.
// https://cookbook.openai.com/examples/how_to_count_tokens_with_tiktoken
const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_REPLY = 3;

// Text like "<|endoftext|>" in a message is text to the API, not a special token (and must not throw).
const AS_PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

let loaded: typeof GptTokenizer | undefined;

/**
 * gpt-tokenizer, loaded on the first count rather than at start: its o200k tables hold ~55–70 MB of RSS and
 * take ~0.4 s to load, and a gateway whose upstreams report usage never counts (docs/performance.md, issue 26).
 */
function tokenizer(): typeof GptTokenizer {
  if (loaded) return loaded;
  loaded = require('gpt-tokenizer') as typeof GptTokenizer;
  // gpt-tokenizer keeps the last 100,000 encoded pieces (client text) in an LRU Map. On text it has not
  // seen, evicting and collecting that Map costs more than the hits save: 1 MB of random base64 took 3 s
  // with it and 0.75 s without (ordinary text: single-token pieces skip BPE and the cache anyway).
  loaded.setMergeCacheSize(0);
  return loaded;
}

// Counting is linear but a 10 MB body still costs seconds: it gives the event loop back this often.
const SLICE_MS = 10;
const CHECK_CLOCK_EVERY_CHARS = 4096;

/** A text cut to a number of tokens. */
export interface TokenPrefix {
  text: string;
  tokens: number;
  cut: boolean;
}

/**
 * Tokens of a text with the o200k_base encoding (gpt-4o family), counted piece by piece (token-pieces.ts):
 * the reference count for ordinary text, linear time for any text, yielding to the event loop every 10 ms.
 */
export function countTextTokens(text: string): Promise<number> {
  return countWith(text, new EventLoopYielder());
}

async function countWith(text: string, yielder: EventLoopYielder): Promise<number> {
  let total = 0;
  const { countTokens } = tokenizer();
  for (const piece of tokenPieces(text)) {
    total += countTokens(piece, AS_PLAIN_TEXT);
    if (yielder.due(piece.length)) await yielder.yield();
  }
  return total;
}

/**
 * Tokens of tool calls as the gateway counts what a model produced (chat-usage.ts): each call's name then
 * its arguments, one text in order, so that dev-echo's count is the count billed for an upstream without usage.
 */
export function countToolCallTokens(calls: readonly { name: string; arguments: string }[]): Promise<number> {
  return countTextTokens(calls.map((call) => call.name + call.arguments).join(''));
}

/** The longest prefix of a text that has at most `limit` tokens (dev-echo's max_tokens cut), with its count. */
export async function tokenPrefix(text: string, limit: number): Promise<TokenPrefix> {
  let tokens = 0;
  let end = 0;
  const yielder = new EventLoopYielder();
  const { encode, decode } = tokenizer();
  for (const piece of tokenPieces(text)) {
    const pieceTokens = encode(piece, AS_PLAIN_TEXT);
    if (tokens + pieceTokens.length > limit) {
      const kept = pieceTokens.slice(0, limit - tokens);
      return { text: text.slice(0, end) + decode(kept), tokens: limit, cut: true };
    }
    tokens += pieceTokens.length;
    end += piece.length;
    if (yielder.due(piece.length)) await yielder.yield();
  }
  return { text, tokens, cut: false };
}

/**
 * Prompt tokens of a chat request, counted the way OpenAI bills them: its messages, and its tool
 * definitions (`tools`, legacy `functions`) as their JSON text (OpenAI renders them in a format of its own).
 */
export async function countPromptTokens(messages: unknown[], toolDefinitions: unknown[] = []): Promise<number> {
  let total = TOKENS_PER_REPLY;
  const yielder = new EventLoopYielder();
  for (const tools of toolDefinitions) total += await countWith(JSON.stringify(tools), yielder);
  for (const message of messages) {
    total += TOKENS_PER_MESSAGE;
    if (yielder.due(1)) await yielder.yield();
    if (!message || typeof message !== 'object') continue;
    for (const [field, value] of Object.entries(message)) {
      if (value === null || value === undefined) continue;
      total += await countWith(field === 'content' ? contentText(value) : typeof value === 'string' ? value : JSON.stringify(value), yielder);
    }
  }
  return total;
}

/** The tool definitions a chat request's prompt carries: `tools`, and the legacy `functions`. */
export function toolDefinitions(body: Pick<ChatRequestBody, 'tools' | 'functions'>): unknown[] {
  return [body.tools, body.functions].filter((tools) => tools !== undefined && tools !== null);
}

/** The text of a message content: a string, or the text parts of a content array. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return JSON.stringify(content);
  return content
    .map((part: { type?: unknown; text?: unknown }) => (part?.type === 'text' && typeof part.text === 'string' ? part.text : JSON.stringify(part)))
    .join('');
}

/** Gives the event loop back (setImmediate, after pending I/O) once SLICE_MS of work has passed. */
export class EventLoopYielder {
  private sliceStart = performance.now();
  private charsSinceCheck = 0;

  /** Whether the slice is used up after `chars` more characters of work (the clock is read every 4096). */
  due(chars: number): boolean {
    this.charsSinceCheck += chars;
    if (this.charsSinceCheck < CHECK_CLOCK_EVERY_CHARS) return false;
    this.charsSinceCheck = 0;
    return performance.now() - this.sliceStart >= SLICE_MS;
  }

  async yield(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    this.sliceStart = performance.now();
  }
}
