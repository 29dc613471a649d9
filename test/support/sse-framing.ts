import { randomInt } from 'node:crypto';
import { ServerResponse } from 'node:http';

/**
 * How the fake upstream cuts its SSE answers into writes (docs/chat-testing.md, "Random framing").
 * - `random` (the default): any framing the SSE rules allow, as proxies and real providers produce it: the
 *   bytes cut at random points (inside lines and inside multi-byte UTF-8 characters) and several events
 *   coalesced into one write, `:` comment lines, `: keep-alive` comments and blank lines between events, and
 *   lines ended by LF, CRLF or a lone CR (one choice per stream).
 * - `exact`: one write per event, each `data: ...\n\n`, as OpenAI sends it; for tests that count writes.
 * https://html.spec.whatwg.org/multipage/server-sent-events.html#parsing-an-event-stream
 */
export type SseFraming = 'random' | 'exact';

/**
 * The seed of every random framing in this test file: FAKE_SSE_SEED, or a random one. A failing test prints it
 * (test/support/seed-environment.js); `FAKE_SSE_SEED=<seed> npx jest <file>` replays the framings of that run, as
 * far as the order of the requests is the same.
 */
export const SSE_BASE_SEED = Number(process.env.FAKE_SSE_SEED) || randomInt(1, 2 ** 31);
(globalThis as { __FAKE_SSE_SEED__?: number }).__FAKE_SSE_SEED__ = SSE_BASE_SEED;

/** Mixes two numbers into a 32-bit seed (so that fake k's request j has a seed of its own). */
export function mixSeed(a: number, b: number): number {
  let h = Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(b + 0x632be59b, 0xc2b2ae35);
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  return h >>> 0;
}

/** mulberry32: a small seeded generator of numbers in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const LINE_ENDS = ['\n', '\n', '\r\n', '\r\n', '\r'];
const FILLERS = [': keep-alive\n\n', '\n', ':\n', ': OPENROUTER PROCESSING\n\n', ': ping\n'];

/** Writes one SSE answer's events with the chosen framing; every write waits until the socket took it. */
export class SseWriter {
  private pending = Buffer.alloc(0);
  private readonly random: () => number;
  private readonly lineEnd: string;

  constructor(
    private readonly res: ServerResponse,
    private readonly framing: SseFraming,
    seed: number,
  ) {
    this.random = seededRandom(seed);
    this.lineEnd = framing === 'random' ? LINE_ENDS[Math.floor(this.random() * LINE_ENDS.length)] : '\n';
  }

  /** One event (`data: ...\n\n`, lines ended by LF): written at once, or added to what waits and a random part of that written. */
  async event(text: string): Promise<boolean> {
    if (this.framing === 'exact') return write(this.res, text);
    let framed = text;
    if (this.random() < 0.3) framed = FILLERS[Math.floor(this.random() * FILLERS.length)] + framed;
    this.pending = Buffer.concat([this.pending, Buffer.from(framed.replace(/\n/g, this.lineEnd), 'utf8')]);
    while (this.pending.length > 0 && this.random() < 0.6) {
      if (!(await this.writePiece(1 + Math.floor(this.random() * this.pending.length)))) return false;
    }
    return true;
  }

  /** Everything that waits, in random pieces: before a pause or a fault, so that the events sent so far reach the client. */
  async flush(): Promise<boolean> {
    while (this.pending.length > 0) {
      const size = this.random() < 0.5 ? this.pending.length : 1 + Math.floor(this.random() * this.pending.length);
      if (!(await this.writePiece(size))) return false;
    }
    return true;
  }

  /** The last event, then the end of the body. */
  async end(text: string): Promise<void> {
    if ((await this.event(text)) && (await this.flush())) this.res.end();
  }

  private writePiece(size: number): Promise<boolean> {
    const piece = this.pending.subarray(0, size);
    this.pending = this.pending.subarray(size);
    return write(this.res, piece);
  }
}

/**
 * Resolves once the data is handed to the socket, so that a later destroy cannot discard it; false if the
 * write failed (the client went away).
 */
function write(res: ServerResponse, data: string | Buffer): Promise<boolean> {
  return new Promise((resolve) => res.write(data, (err) => resolve(!err)));
}
