import { promptUnits, TTL_MS } from './fake-anthropic-request';
import type { AnthropicUsage } from './fake-anthropic-types';

/** The fake Anthropic's prompt cache (fake-anthropic.ts, `FakeAnthropic.usageFor`): the input side of an answer's usage. */

/** Anthropic checks for cache hits at the block boundaries up to 20 blocks before each breakpoint. */
const LOOKBACK_BLOCKS = 20;

/** The input side of a usage block: how many input tokens were read from the cache, written to it, or neither. */
export type InputUsage = Pick<AnthropicUsage, 'input_tokens' | 'cache_creation_input_tokens' | 'cache_read_input_tokens' | 'cache_creation'>;

/**
 * The input side of the usage this request would get at `now` from `cache` (prefix hash → expiry, ms on the same
 * clock); with `write`, the cache is updated as the answer does (every breakpoint's prefix written or refreshed).
 *
 * Breakpoints are the blocks marked `cache_control` (and the last block of the last message when the
 * request carries a top-level `cache_control`), taken in Anthropic's order: tools, system, messages. The
 * longest cached prefix that ends at a breakpoint, or at one of the 20 blocks before a breakpoint
 * (Anthropic's lookback), is read (`cache_read_input_tokens`: every token up to its end); each breakpoint
 * past it writes the tokens between the end of the read prefix or of the previous breakpoint and itself
 * (`cache_creation_input_tokens`, split in `cache_creation` by that breakpoint's `ttl`, 5m by default);
 * `input_tokens` is what follows the last breakpoint. Only breakpoints' prefixes are written. Anthropic's
 * minimum cacheable length is not modelled (any prefix is cached).
 */
export function cacheUsage(cache: Map<string, number>, now: number, body: any, write: boolean): InputUsage {
  const units = promptUnits(body);
  const cached = (hash: string) => (cache.get(hash) ?? -1) > now;
  const ends: number[] = [];
  let position = 0;
  for (const unit of units) ends.push((position += unit.tokens));
  const breakpoints = units.flatMap((u, i) => (u.ttl ? [{ unit: i, end: ends[i], hash: u.hash, ttl: u.ttl }] : []));
  // The longest cached prefix ending at a breakpoint or at one of the LOOKBACK_BLOCKS blocks before one.
  let read = 0;
  for (const b of breakpoints) {
    for (let i = b.unit; i >= Math.max(0, b.unit - LOOKBACK_BLOCKS); i--) {
      if (cached(units[i].hash)) {
        read = Math.max(read, ends[i]);
        break;
      }
    }
  }
  const creation = { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 };
  let from = read;
  for (const b of breakpoints) {
    if (b.end <= from) continue;
    creation[b.ttl === '1h' ? 'ephemeral_1h_input_tokens' : 'ephemeral_5m_input_tokens'] += b.end - from;
    from = b.end;
  }
  if (write) {
    for (const b of breakpoints) cache.set(b.hash, Math.max(cache.get(b.hash) ?? 0, now + TTL_MS[b.ttl]));
  }
  return {
    input_tokens: position - (breakpoints.at(-1)?.end ?? 0),
    cache_creation_input_tokens: creation.ephemeral_5m_input_tokens + creation.ephemeral_1h_input_tokens,
    cache_read_input_tokens: read,
    cache_creation: creation,
  };
}
