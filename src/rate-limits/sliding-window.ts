/** The window every rpm and tpm is counted over. */
export const WINDOW_MS = 60_000;
/**
 * How many of the oldest admissions a refusal over tpm reads to work out when enough tokens leave the window;
 * beyond them the window's whole length bounds the wait. Keeps a refusal's cost bounded however many small
 * requests the window holds.
 */
export const MAX_SCAN = 1000;

/** One window (a key's or an account's) and its limits; null: none. */
export interface WindowAsk {
  key: string;
  rpm: number | null;
  tpm: number | null;
}

export type Refusal = 'requests' | 'tokens' | 'too_large';

/** A window after a check. */
export interface WindowAnswer {
  /** Admissions in the window, this one included when admitted. */
  requests: number;
  /** Tokens they hold, this request's included when admitted. */
  tokens: number;
  /** Which of its limits refused the request; null: none did. */
  refused: Refusal | null;
  /** Refused: ms until this request would fit (as far as this window is concerned). */
  retryMs: number;
  /** ms until the oldest admission counted leaves the window (when what remains next goes up); 0: none counted. */
  resetMs: number;
}

export interface WindowsAnswer {
  /** Every window had room: the request is counted in all of them; else in none. */
  admitted: boolean;
  windows: WindowAnswer[];
}

/**
 * Sliding-window logs of admissions (docs/decisions.md, "Rate limits: a sliding log"): each admission is counted,
 * with its tokens, for WINDOW_MS after it was admitted. Checked and counted for every window at once, atomically;
 * a refused request is counted nowhere.
 */
export interface WindowStore {
  hit(asks: WindowAsk[], member: string, tokens: number): Promise<WindowsAnswer>;
  /** The admission `member` now holds `tokens` in these windows (unless it has left them already). */
  trueUp(keys: string[], member: string, tokens: number): Promise<void>;
  /** Resolves once the store can answer, or has had its moment to (before the app serves). */
  ready(): Promise<void>;
  close(): void;
}

/** The store could not answer (Redis down, hung or refusing): the request goes on without the limits, as the burst limit's does. */
export class WindowStoreUnavailable extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = WindowStoreUnavailable.name;
  }
}

interface Admission {
  member: string;
  at: number;
  tokens: number;
}

interface Log {
  /** Oldest first; those before `head` have left. */
  entries: Admission[];
  head: number;
  sum: number;
  byMember: Map<string, Admission>;
}

const SWEEP_INTERVAL_MS = 60_000;

/** The windows in this process, without REDIS_URL: each replica counts its own (said at start-up). */
export class MemoryWindowStore implements WindowStore {
  private readonly logs = new Map<string, Log>();
  private readonly sweeper = setInterval(() => this.dropIdle(Date.now()), SWEEP_INTERVAL_MS).unref();

  constructor(private readonly now: () => number = Date.now) {}

  async hit(asks: WindowAsk[], member: string, tokens: number): Promise<WindowsAnswer> {
    const now = this.now();
    const logs = asks.map((ask) => this.evicted(ask.key, now));
    const windows = asks.map((ask, i) => check(ask, logs[i], tokens, now));
    const admitted = windows.every((w) => w.refused === null);
    if (admitted) {
      for (const [i, log] of logs.entries()) {
        const admission = { member, at: now, tokens };
        log.entries.push(admission);
        log.byMember.set(member, admission);
        log.sum += tokens;
        windows[i].requests++;
        windows[i].tokens += tokens;
      }
    }
    for (const [i, log] of logs.entries()) windows[i].resetMs = live(log) > 0 ? log.entries[log.head].at + WINDOW_MS - now : 0;
    return { admitted, windows };
  }

  async trueUp(keys: string[], member: string, tokens: number): Promise<void> {
    for (const key of keys) {
      const admission = this.logs.get(key)?.byMember.get(member);
      if (!admission) continue;
      this.logs.get(key)!.sum += tokens - admission.tokens;
      admission.tokens = tokens;
    }
  }

  async ready(): Promise<void> {}

  close(): void {
    clearInterval(this.sweeper);
    this.logs.clear();
  }

  private evicted(key: string, now: number): Log {
    let log = this.logs.get(key);
    if (!log) {
      log = { entries: [], head: 0, sum: 0, byMember: new Map() };
      this.logs.set(key, log);
    }
    while (log.head < log.entries.length && log.entries[log.head].at <= now - WINDOW_MS) {
      const gone = log.entries[log.head++];
      log.sum -= gone.tokens;
      log.byMember.delete(gone.member);
    }
    // Amortised: the array is cut once half of it has left.
    if (log.head > 1024 && log.head * 2 > log.entries.length) {
      log.entries = log.entries.slice(log.head);
      log.head = 0;
    }
    return log;
  }

  private dropIdle(now: number): void {
    for (const [key, log] of this.logs) if (live(this.evicted(key, now)) === 0) this.logs.delete(key);
  }
}

function live(log: Log): number {
  return log.entries.length - log.head;
}

/** The Lua script's decision (sliding-window-redis.ts), on a log of this process. */
function check(ask: WindowAsk, log: Log, tokens: number, now: number): WindowAnswer {
  const answer: WindowAnswer = { requests: live(log), tokens: log.sum, refused: null, retryMs: 0, resetMs: 0 };
  if (ask.rpm !== null && answer.requests + 1 > ask.rpm) {
    answer.refused = 'requests';
    answer.retryMs = log.entries[log.head + answer.requests - ask.rpm].at + WINDOW_MS - now;
  }
  if (ask.tpm !== null && tokens > ask.tpm) {
    answer.refused = 'too_large';
    answer.retryMs = WINDOW_MS;
  } else if (ask.tpm !== null && log.sum + tokens > ask.tpm) {
    const need = log.sum + tokens - ask.tpm;
    let freed = 0;
    let leaves = now;
    for (let i = log.head; i < Math.min(log.entries.length, log.head + MAX_SCAN); i++) {
      freed += log.entries[i].tokens;
      if (freed >= need) {
        leaves = log.entries[i].at;
        break;
      }
    }
    const wait = leaves + WINDOW_MS - now;
    if (wait > answer.retryMs) {
      answer.refused = 'tokens';
      answer.retryMs = wait;
    }
  }
  return answer;
}
