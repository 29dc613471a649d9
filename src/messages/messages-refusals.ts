import { storableText } from '../common/storable-text';
import { ErrorCode, GatewayError, unsupportedField } from '../errors';
import { quotedClientText } from '../models/requested-model';
import { MESSAGES_FIELDS } from './dto/messages.schema';

const asked = (value: unknown) => value !== undefined && value !== null && !(Array.isArray(value) && value.length === 0);

/** Fields that need Anthropic's own platform: refused whenever set (DESIGN.md section 10). */
const REFUSED: Record<string, string> = {
  mcp_servers: "MCP servers are connected by Anthropic's platform; this gateway serves chat-completion upstreams. Call your MCP tools from the client as ordinary tools.",
  container: "code execution containers run on Anthropic's platform, which this gateway does not offer.",
};

/**
 * Accepted and not forwarded (DESIGN.md section 10): tuning of Anthropic's own service that a chat upstream
 * has no equivalent for; an answer does not depend on them beyond what the upstream decides.
 */
const IGNORED = ['cache_control', 'thinking', 'context_management', 'service_tier'];

/** Translated into the chat completion (the body's schema): the scalars, and what is translated part by part. */
const KNOWN = new Set([...MESSAGES_FIELDS, ...IGNORED, ...Object.keys(REFUSED)]);

/** 400 `unsupported_parameter` for a field that needs Anthropic's platform; 400 for a field the Messages API does not have. */
export function refuseUnservedFields(fields: Record<string, unknown>): void {
  for (const [name, why] of Object.entries(REFUSED)) {
    if (Object.prototype.hasOwnProperty.call(fields, name) && asked(fields[name])) throw unsupportedField(name, why);
  }
  const unknown = Object.keys(fields).find((name) => !KNOWN.has(name));
  if (unknown !== undefined) {
    throw new GatewayError(ErrorCode.InvalidRequest, `Unknown parameter: ${quotedClientText(unknown)}.`, storableText(unknown, 64));
  }
}
