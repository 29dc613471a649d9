import type { ChatRequestBody } from '../chat-contract';

/**
 * What the two ways to Claude share in translating a chat request (DESIGN.md section 11): the `anthropic` provider's
 * Messages request (chat-to-anthropic.ts) and the `bedrock` provider's Converse request (../bedrock/chat-to-bedrock.ts):
 * reasoning_effort as a thinking budget, and a conversation in alternating user and assistant turns.
 */

/** Claude's extended thinking needs a budget of at least 1,024 tokens, below the output limit. */
export const MIN_THINKING_BUDGET = 1024;
/** chat's reasoning_effort as a thinking budget; `minimal` and `none` turn thinking off. */
export const THINKING_BUDGET: Readonly<Record<string, number>> = { low: 2048, medium: 8192, high: 24576, xhigh: 32768 };

/** Claude's `thinking` field, turned on with a budget. */
export type ClaudeThinking = { type: 'enabled'; budget_tokens: number };

/** One turn of the conversation: a user's or the assistant's, made of the dialect's content blocks. */
export interface ClaudeTurn<Block> {
  role: 'user' | 'assistant';
  content: Block[];
}

/** The thinking a reasoning_effort asks for within `maxTokens`; none when the budget left would be below Claude's least. */
export function claudeThinking(effort: ChatRequestBody['reasoning_effort'], maxTokens: number): ClaudeThinking | undefined {
  const wanted = typeof effort === 'string' ? THINKING_BUDGET[effort] : undefined;
  if (wanted === undefined) return undefined;
  const budget = Math.min(wanted, maxTokens - 1);
  return budget >= MIN_THINKING_BUDGET ? { type: 'enabled', budget_tokens: budget } : undefined;
}

/**
 * Adds a message's blocks to the conversation. User and assistant turns must alternate: consecutive messages of one
 * role join one turn, and tool results lead their user turn, as Claude requires (a stable sort keeps each group's
 * order, so a block that followed a result, such as Bedrock's cache point, stays behind it).
 */
export function appendTurn<Block>(turns: ClaudeTurn<Block>[], role: ClaudeTurn<Block>['role'], blocks: Block[], isToolResult: (block: Block) => boolean): void {
  if (blocks.length === 0) return;
  const last = turns[turns.length - 1];
  if (last?.role !== role) {
    turns.push({ role, content: blocks });
    return;
  }
  last.content.push(...blocks);
  if (role === 'user') last.content.sort((a, b) => Number(isToolResult(b)) - Number(isToolResult(a)));
}
