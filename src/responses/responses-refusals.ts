import { ErrorCode, GatewayError, unsupportedField } from '../errors';
import { storableText } from '../common/storable-text';
import { quotedClientText } from '../models/requested-model';
import { RESPONSES_FIELDS } from './dto/responses.schema';

const isSet = (value: unknown) => value !== undefined && value !== null;
const SERVER_STATE = 'this gateway is stateless: it stores no responses, conversations or prompts.';

/** Fields that need state kept between requests, or work done by OpenAI's platform itself; when each counts as asked for. */
const REFUSED: Record<string, { asked(value: unknown): boolean; why: string }> = {
  previous_response_id: { asked: isSet, why: `${SERVER_STATE} Send the whole conversation in input.` },
  conversation: { asked: isSet, why: `${SERVER_STATE} Send the whole conversation in input.` },
  store: { asked: (v) => v === true, why: `${SERVER_STATE} Leave store out or set it to false.` },
  background: { asked: (v) => v === true, why: `${SERVER_STATE} Background responses cannot be fetched later.` },
  prompt: { asked: isSet, why: `${SERVER_STATE} Send the prompt's text as instructions and input.` },
  context_management: { asked: isSet, why: 'server-side compaction is not offered.' },
  include: { asked: (v) => isSet(v) && !(Array.isArray(v) && v.length === 0), why: 'the extra outputs it asks for come from built-in tools, stored items or logprobs, none of which is served.' },
  truncation: { asked: (v) => v === 'auto', why: 'the gateway does not drop input items to fit the context window; leave truncation out or set it to "disabled".' },
};

/** Parameters of CreateResponse that are accepted and not passed on (tuning of OpenAI's own service). */
const IGNORED = [
  'service_tier', 'prompt_cache_key', 'prompt_cache_retention', 'prompt_cache_options', 'safety_identifier',
  'max_tool_calls', 'top_logprobs', 'moderation', 'stream_options',
];

/** Parameters translated into the chat completion (the body's schema): the scalars, and what is translated item by item. */
const KNOWN = new Set([...RESPONSES_FIELDS, ...IGNORED, ...Object.keys(REFUSED)]);

/** 400 `unsupported_parameter` for the first field that needs server state; 400 for a field CreateResponse does not have. */
export function refuseUnservedFields(fields: Record<string, unknown>): void {
  for (const [name, rule] of Object.entries(REFUSED)) {
    if (Object.prototype.hasOwnProperty.call(fields, name) && rule.asked(fields[name])) throw unsupportedField(name, rule.why);
  }
  const unknown = Object.keys(fields).find((name) => !KNOWN.has(name));
  if (unknown !== undefined) {
    throw new GatewayError(ErrorCode.InvalidRequest, `Unknown parameter: ${quotedClientText(unknown)}.`, storableText(unknown, 64));
  }
}
