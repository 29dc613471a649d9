import type { FakeWebSearch } from './fake-anthropic-types';
import { fakeTokenCount } from './fake-tokens';

/**
 * The fake Anthropic's server tools (fake-anthropic.ts): the web search tool it runs, from
 * https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool and the SDK's types
 * (ServerToolUseBlock, WebSearchToolResultBlock, ServerToolUsage). Web fetch is accepted and never run.
 */

/** The dated types of the web search tool (@anthropic-ai/sdk 1.14: WebSearchTool20250305, 20260209, 20260318). */
export const WEB_SEARCH_TYPES = ['web_search_20250305', 'web_search_20260209', 'web_search_20260318'];
/** The server tools whose uses usage.server_tool_use counts (`web_search_requests`, `web_fetch_requests`). */
const COUNTED_SERVER_TOOL = /^(web_search|web_fetch)_\d{8}$/;

/** One search the model makes: its server_tool_use block, and whether max_uses still allowed it. */
export interface SearchCall {
  id: string;
  name: 'web_search';
  input: { query: string };
  allowed: boolean;
}

function toolsOf(body: any): any[] {
  return Array.isArray(body?.tools) ? body.tools : [];
}

/** The web search tool the request offers, if it offers one. */
export function offeredWebSearch(body: any): { max_uses?: number } | undefined {
  return toolsOf(body).find((tool) => WEB_SEARCH_TYPES.includes(tool?.type));
}

/** Whether the answer's usage reports server tools' uses: the request offered one that Anthropic counts. */
export function offersCountedServerTool(body: any): boolean {
  return toolsOf(body).some((tool) => typeof tool?.type === 'string' && COUNTED_SERVER_TOOL.test(tool.type));
}

/** The searches of `script` when the request offers the tool: one per query, those past its `max_uses` refused. */
export function searchCalls(script: FakeWebSearch | null, body: any, nextId: () => string): SearchCall[] {
  const tool = offeredWebSearch(body);
  if (!script || !tool) return [];
  const limit = typeof tool.max_uses === 'number' ? tool.max_uses : Infinity;
  return script.queries.map((query, i) => ({ id: nextId(), name: 'web_search', input: { query }, allowed: i < limit }));
}

/**
 * The blocks of the searches made: each a `server_tool_use` then its `web_search_tool_result` (the results, or the
 * `max_uses_exceeded` error); with the searches counted (`web_search_requests`) and the tokens their results add to
 * the input (search results are input tokens, https://docs.claude.com/en/docs/about-claude/pricing#web-search-tool).
 */
export function searchBlocks(script: FakeWebSearch, calls: SearchCall[]): { blocks: unknown[]; searches: number; inputTokens: number } {
  const blocks: unknown[] = [];
  let searches = 0;
  let inputTokens = 0;
  const caller = { type: 'direct' };
  for (const call of calls) {
    blocks.push({ type: 'server_tool_use', id: call.id, name: call.name, input: call.input, caller });
    if (!call.allowed) {
      blocks.push({ type: 'web_search_tool_result', tool_use_id: call.id, content: { type: 'web_search_tool_result_error', error_code: 'max_uses_exceeded' }, caller });
      continue;
    }
    const content = script.results.map((r) => ({
      type: 'web_search_result',
      url: r.url,
      title: r.title,
      encrypted_content: Buffer.from(`${call.input.query} ${r.url}`).toString('base64'),
      page_age: r.page_age ?? null,
    }));
    blocks.push({ type: 'web_search_tool_result', tool_use_id: call.id, content, caller });
    searches += 1;
    inputTokens += fakeTokenCount(JSON.stringify(content));
  }
  return { blocks, searches, inputTokens };
}
