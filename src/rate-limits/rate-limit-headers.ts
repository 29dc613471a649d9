import { WindowAnswer, WindowAsk } from './sliding-window';

/** OpenAI's headers (https://platform.openai.com/docs/guides/rate-limits#rate-limits-in-headers), for the tightest limit. */
export type RateLimitHeaders = Array<[name: string, value: string]>;

/**
 * For requests and for tokens apart, the window whose limit has the least left (the lower limit on a tie): its
 * limit, what remains after this request (counted when admitted), and when the oldest admission it counts leaves it
 * (what remains next goes up then). No header of a measure no window limits.
 */
export function rateLimitHeaders(asks: WindowAsk[], windows: WindowAnswer[]): RateLimitHeaders {
  const headers: RateLimitHeaders = [];
  for (const measure of ['requests', 'tokens'] as const) {
    let tightest: { limit: number; remaining: number; resetMs: number } | null = null;
    for (const [i, ask] of asks.entries()) {
      const limit = measure === 'requests' ? ask.rpm : ask.tpm;
      if (limit === null) continue;
      const remaining = Math.max(0, limit - windows[i][measure]);
      if (!tightest || remaining < tightest.remaining || (remaining === tightest.remaining && limit < tightest.limit)) {
        tightest = { limit, remaining, resetMs: windows[i].resetMs };
      }
    }
    if (!tightest) continue;
    headers.push(
      [`x-ratelimit-limit-${measure}`, String(tightest.limit)],
      [`x-ratelimit-remaining-${measure}`, String(tightest.remaining)],
      [`x-ratelimit-reset-${measure}`, openAiDuration(tightest.resetMs)],
    );
  }
  return headers;
}

/** A duration as OpenAI's headers write it (Go's time.Duration): `20ms`, `1s`, `1.5s`, `6m0s`, `1h0m0s`. */
export function openAiDuration(ms: number): string {
  const whole = Math.max(0, Math.round(ms));
  if (whole === 0) return '0s';
  if (whole < 1000) return `${whole}ms`;
  const hours = Math.floor(whole / 3_600_000);
  const minutes = Math.floor((whole % 3_600_000) / 60_000);
  const seconds = String((whole % 60_000) / 1000);
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  return minutes > 0 ? `${minutes}m${seconds}s` : `${seconds}s`;
}
