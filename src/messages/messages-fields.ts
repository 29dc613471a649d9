import { IgnoredParam, ignoredParam } from '../chat/ignored-params';
import { unsupportedField } from '../errors';
import type { MessagesRequestBody } from '../providers/anthropic/messages-wire';
import { MESSAGES_FIELDS } from './dto/messages.schema';

const asked = (value: unknown) => value !== undefined && value !== null && !(Array.isArray(value) && value.length === 0);

/** Fields that need Anthropic's own platform: refused whenever set (DESIGN.md section 11, docs/messages.md). */
const REFUSED: Record<string, string> = {
  mcp_servers: "MCP servers are connected by Anthropic's platform; this gateway serves chat-completion upstreams. Call your MCP tools from the client as ordinary tools.",
  container: "code execution containers run on Anthropic's platform, which this gateway does not offer.",
};

/**
 * Accepted and not forwarded to a chat upstream (DESIGN.md section 11): how Anthropic's service tunes the model
 * (effort, thinking, context editing, tier, caching, speed, region, top_k), which chat has no place for. The tier,
 * speed and region change the price: a value the model does not price is refused first, and a priced tier is
 * carried (DESIGN.md section 12.2, chat/price-options-check.ts). Any other field the gateway does not know is
 * ignored too, under the metric label `other`.
 */
const IGNORED = ['output_config', 'context_management', 'thinking', 'service_tier', 'cache_control', 'speed', 'inference_geo', 'top_k'];
const KNOWN_IGNORED = new Set(IGNORED);
/** The metric labels: the ignored list, and `stop_sequences`, which a Responses upstream does not take (`upstream_api: responses`). */
const LABELS = new Set([...IGNORED, 'stop_sequences']);

/** Translated into the chat completion: the schema's fields but top_k, which is checked and then ignored. */
const SERVED = new Set(MESSAGES_FIELDS.filter((name) => !KNOWN_IGNORED.has(name)));

/** 400 `unsupported_parameter` for the first field that needs Anthropic's platform. */
export function refuseUnservedFields(fields: MessagesRequestBody): void {
  for (const [name, why] of Object.entries(REFUSED)) {
    if (Object.prototype.hasOwnProperty.call(fields, name) && asked(fields[name])) throw unsupportedField(name, why);
  }
}

/**
 * What the request asked for and the gateway does not use, in request order; the withdrawn tools where `tools` stands.
 * `carried`: fields of the ignored list that this request has served (a priced `service_tier`). `unsent`: fields
 * translated into chat that the model's upstream has no place for (`stop_sequences` on a Responses upstream).
 */
export function ignoredFields(fields: MessagesRequestBody, withdrawnTools: readonly IgnoredParam[], carried: readonly string[] = [], unsent: readonly string[] = []): IgnoredParam[] {
  const ignored: IgnoredParam[] = [];
  for (const [name, value] of Object.entries(fields)) {
    if (name === 'tools') ignored.push(...withdrawnTools);
    else if (unused(name, value, unsent) && !carried.includes(name)) ignored.push(ignoredParam(name, LABELS));
  }
  return ignored;
}

/** A field set to a value and neither translated (or translated, and not sent) nor refused. */
function unused(name: string, value: unknown, unsent: readonly string[]): boolean {
  if (value === undefined || value === null || Object.prototype.hasOwnProperty.call(REFUSED, name)) return false;
  return !SERVED.has(name) || (unsent.includes(name) && asked(value));
}
