export interface AdminTokenThrottleSettings {
  /** Wrong tokens an address may present per window; the next ones get 429 until the window ends. */
  maxFailures: number;
  windowMs: number;
  /** Addresses remembered at once; beyond, the oldest window is forgotten first. */
  maxAddresses: number;
}

/** docs/decisions.md, "Guessing": 10 wrong admin tokens a minute per address, 10,000 addresses (a few MB). */
export const ADMIN_TOKEN_THROTTLE: AdminTokenThrottleSettings = { maxFailures: 10, windowMs: 60_000, maxAddresses: 10_000 };

interface FailureWindow {
  startedAt: number;
  failures: number;
}

/**
 * Counts wrong admin tokens per client address, in this replica's memory (each replica counts its
 * own: N replicas allow N times the tries, still far too few for a 32-character token).
 * Fixed windows that start at an address's first failure; the map is ordered by window start, so
 * its first entry is always the oldest and eviction is O(1).
 */
export class AdminTokenThrottle {
  private readonly windows = new Map<string, FailureWindow>();

  constructor(
    private readonly settings: AdminTokenThrottleSettings = ADMIN_TOKEN_THROTTLE,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whole seconds (at least 1) until the address may try again, or null when it may try now. */
  retryAfterSeconds(ip: string | undefined): number | null {
    const window = this.liveWindow(trackerFor(ip));
    if (!window || window.failures < this.settings.maxFailures) return null;
    return Math.max(1, Math.ceil((window.startedAt + this.settings.windowMs - this.now()) / 1000));
  }

  recordFailure(ip: string | undefined): void {
    const tracker = trackerFor(ip);
    const window = this.liveWindow(tracker);
    if (window) {
      window.failures++;
      return;
    }
    this.evictForOneMore();
    this.windows.set(tracker, { startedAt: this.now(), failures: 1 });
  }

  /** Addresses currently remembered (for tests and the memory bound). */
  get size(): number {
    return this.windows.size;
  }

  private liveWindow(tracker: string): FailureWindow | undefined {
    const window = this.windows.get(tracker);
    if (window && window.startedAt + this.settings.windowMs <= this.now()) {
      this.windows.delete(tracker);
      return undefined;
    }
    return window;
  }

  private evictForOneMore(): void {
    const expiredBefore = this.now() - this.settings.windowMs;
    for (const [tracker, window] of this.windows) {
      if (window.startedAt > expiredBefore && this.windows.size < this.settings.maxAddresses) return;
      this.windows.delete(tracker);
    }
  }
}

/**
 * The throttled unit: an IPv4 address, or the /64 of an IPv6 address (one subscriber usually holds
 * a whole /64, and rotating addresses inside it must not reset the count).
 */
export function trackerFor(ip: string | undefined): string {
  if (!ip) return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1];
  if (!ip.includes(':')) return ip;
  const [head, tail] = ip.split('%')[0].toLowerCase().split('::');
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const zeros = new Array<string>(Math.max(0, 8 - headGroups.length - tailGroups.length)).fill('0');
  const groups = [...headGroups, ...zeros, ...tailGroups].slice(0, 4);
  return `${groups.map((group) => parseInt(group, 16).toString(16)).join(':')}::/64`;
}
