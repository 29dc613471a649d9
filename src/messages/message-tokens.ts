import { countPromptTokens, countTextTokens } from '../providers/token-count';

/**
 * The gateway's count of a prompt: its chat messages as chat bills them, and the tool definitions as the
 * JSON the upstream receives (DESIGN.md section 10, the count used without upstream usage). Linear in the
 * body, yielding to the event loop.
 */
export async function promptTokens(messages: unknown[], tools: unknown[] | undefined): Promise<number> {
  const counted = await countPromptTokens(messages);
  return tools === undefined ? counted : counted + (await countTextTokens(JSON.stringify(tools)));
}
