import { separatesCacheWrite1h, tokenUsageOf } from '../billing/request-cost';
import { costOf } from '../chat/chat-usage';
import type { MessageUsage } from '../providers/anthropic/anthropic-wire';
import type { ChatUsage } from '../providers/chat-contract';

/**
 * Chat's usage block in Anthropic's terms (DESIGN.md section 10): the cached and cache-write tokens are part
 * of chat's prompt_tokens and stand beside Anthropic's input_tokens, read as billing reads them
 * (tokenUsageOf: invalid subtotals count 0, subtotals over the total are cut to fit). `cache_creation` splits the
 * cache writes by TTL when the upstream tells the 1-hour ones apart (separatesCacheWrite1h). Null when the
 * upstream sent no valid usage. The charge (`cost`) rides along when ChatService set it.
 */
export function messageUsage(usage: ChatUsage | null | undefined): MessageUsage | null {
  const tokens = tokenUsageOf(usage);
  if (!tokens) return null;
  return {
    input_tokens: tokens.promptTokens - tokens.cachedTokens - tokens.cacheWriteTokens,
    output_tokens: tokens.completionTokens,
    cache_read_input_tokens: tokens.cachedTokens,
    cache_creation_input_tokens: tokens.cacheWriteTokens,
    ...(separatesCacheWrite1h(usage) && {
      cache_creation: {
        ephemeral_5m_input_tokens: tokens.cacheWriteTokens - tokens.cacheWrite1hTokens,
        ephemeral_1h_input_tokens: tokens.cacheWrite1hTokens,
      },
    }),
    ...costOf(usage),
  };
}
