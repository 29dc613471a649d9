import { IgnoredParam, ignoredParam } from '../chat/ignored-params';
import { isJsonObject } from '../common/json/scalar-fields';
import { invalidField, unsupportedField } from '../errors';
import type { ResponsesRequest } from '../providers/openai/responses-wire';
import { RESPONSES_FIELDS } from './dto/responses.schema';

const isSet = (value: unknown) => value !== undefined && value !== null;
const SERVER_STATE = 'this gateway is stateless: it stores no responses, conversations or prompts.';

/** Fields that cannot be answered honestly without state kept between requests; when each counts as asked for. */
const REFUSED: Record<'previous_response_id' | 'conversation' | 'background' | 'prompt', { asked(value: unknown): boolean; why: string }> = {
  previous_response_id: { asked: isSet, why: `${SERVER_STATE} Send the whole conversation in input.` },
  conversation: { asked: isSet, why: `${SERVER_STATE} Send the whole conversation in input.` },
  background: { asked: (v) => v === true, why: `${SERVER_STATE} Background responses cannot be fetched later.` },
  prompt: { asked: isSet, why: `${SERVER_STATE} Send the prompt's text as instructions and input.` },
};

/**
 * Accepted and not used (DESIGN.md section 11): tuning of OpenAI's own service (a standard `service_tier`: a priced
 * one is served, an unpriced one refused, DESIGN.md section 12.2), outputs the gateway cannot make, `store: true`
 * (nothing is kept) and `truncation: "auto"` (nothing is dropped). Any other field the gateway does not know is
 * ignored too, under the metric label `other`.
 */
const IGNORED = [
  'client_metadata', 'prompt_cache_key', 'prompt_cache_retention', 'prompt_cache_options', 'safety_identifier', 'service_tier',
  'max_tool_calls', 'top_logprobs', 'moderation', 'stream_options', 'context_management', 'store', 'truncation',
  'text.verbosity', 'reasoning.summary', 'reasoning.generate_summary',
];

/** The values of `include`, each of which asks for an output the gateway cannot fill (metric labels: `include:<value>`). */
const INCLUDE_VALUES = [
  'reasoning.encrypted_content', 'message.output_text.logprobs', 'message.input_image.image_url', 'file_search_call.results',
  'web_search_call.results', 'web_search_call.action.sources', 'code_interpreter_call.outputs', 'computer_call_output.output.image_url',
];

const KNOWN_IGNORED = new Set([...IGNORED, ...INCLUDE_VALUES.map((value) => `include:${value}`)]);

/** Served as they are: the schema's fields, `store: false`, `background: false` and `truncation: "disabled"`, the only behaviour there is. */
const SERVED = new Set(RESPONSES_FIELDS);
const SERVED_AS_DEFAULT = new Map<string, unknown>([['store', false], ['background', false], ['truncation', 'disabled']]);

/** 400 `unsupported_parameter` for the first field that needs server state (read before the body is checked: any JSON object). */
export function refuseUnservedFields(fields: Readonly<Record<string, unknown>>): void {
  for (const [name, rule] of Object.entries(REFUSED)) {
    if (Object.prototype.hasOwnProperty.call(fields, name) && rule.asked(fields[name])) throw unsupportedField(name, rule.why);
  }
}

/**
 * What the request asked for and the gateway does not use, in request order: top-level fields, `include` values
 * as `include:<value>`, withdrawn tools where `tools` stands (where `input` stands when only its items offer
 * tools), and the parts of `text` and `reasoning` that ask for what chat cannot give. `carried`: fields of the
 * ignored list that this request has served (a priced `service_tier`).
 */
export function ignoredFields(fields: ResponsesRequest, withdrawnTools: readonly IgnoredParam[], carried: readonly string[] = []): IgnoredParam[] {
  const ignored: IgnoredParam[] = [];
  const add = (name: string) => ignored.push(ignoredParam(name, KNOWN_IGNORED));
  const toolsAt = isSet(fields.tools) ? 'tools' : 'input';
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined || value === null || SERVED_AS_DEFAULT.get(name) === value) continue;
    if (name === toolsAt) ignored.push(...withdrawnTools);
    if (name === 'tools') continue;
    if (name === 'include') for (const included of includeValues(value)) add(`include:${included}`);
    else if (name === 'text' || name === 'reasoning') for (const part of ignoredParts(name, value)) add(part);
    else if (!SERVED.has(name) && !carried.includes(name)) add(name);
  }
  return ignored;
}

/** `include`: an array of strings. */
function includeValues(include: unknown): string[] {
  if (!Array.isArray(include)) throw invalidField('include', 'include must be an array of strings.');
  const at = include.findIndex((value) => typeof value !== 'string');
  if (at >= 0) throw invalidField(`include[${at}]`, 'an include value must be a string.');
  return include as string[];
}

/** `text.verbosity`, `reasoning.summary`: set parts of a served object that chat has no place for. */
function ignoredParts(name: 'text' | 'reasoning', value: unknown): string[] {
  if (!isJsonObject(value)) return [];
  const parts = name === 'text' ? ['verbosity'] : ['summary', 'generate_summary'];
  return parts.filter((part) => isSet(value[part])).map((part) => `${name}.${part}`);
}
