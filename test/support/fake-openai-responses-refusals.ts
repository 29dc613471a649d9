import { OpenAiError, openAiRequestProblem, requestFields } from './openai-request-check';
import { serviceTierRefusal } from './fake-openai-wire';

/**
 * What the fake OpenAI refuses on POST /v1/responses and, for Responses-only models, on /v1/chat/completions: OpenAI's
 * status and body for each, as its clients quote them (each constant names its source). The checks themselves run in
 * fake-openai-responses.ts.
 */

export interface OpenAiRefusal {
  status: number;
  body: { error: { message: string; type: 'invalid_request_error'; param: string | null; code: string | null } };
}

const refusal = (status: number, message: string, param: string | null, code: string | null): OpenAiRefusal => ({
  status,
  body: { error: { message, type: 'invalid_request_error', param, code } },
});

/**
 * Models OpenAI serves only on /v1/responses: Codex 0.171.0's default model (`gpt-6.2-sol`, issue 46), the codex family
 * ("available in the Responses API only", https://developers.openai.com/api/docs/models/gpt-5-codex) and the `-pro` and
 * deep-research models (o1-pro and o3-pro refused on chat: github.com/BoltAI/BoltAI/issues/292,
 * github.com/HeyPuter/puter/issues/1303). A dated snapshot (`o3-pro-2025-06-10`) is its model's.
 */
export const DEFAULT_RESPONSES_ONLY_MODELS = [
  'gpt-6.2-sol',
  'codex-mini-latest',
  'gpt-5-codex',
  'gpt-5.1-codex',
  'gpt-5.1-codex-mini',
  'gpt-5.1-codex-max',
  'gpt-5.2-codex',
  'gpt-5.3-codex',
  'o1-pro',
  'o3-pro',
  'gpt-5-pro',
  'gpt-5.2-pro',
  'o3-deep-research',
  'o4-mini-deep-research',
];

/** True when `model`, or `model` less a `-YYYY-MM-DD` snapshot suffix, is one of `models`. */
export function isResponsesOnly(models: ReadonlySet<string>, model: unknown): boolean {
  return typeof model === 'string' && (models.has(model) || models.has(model.replace(/-\d{4}-\d{2}-\d{2}$/, '')));
}

/**
 * OpenAI's answer to a Responses-only model on /v1/chat/completions. Every answer quoted in public reports is a 404 with
 * this body (github.com/alvinunreal/tmuxai/issues/82 quotes it whole; 404 in github.com/docker/docker-agent/issues/313,
 * github.com/HeyPuter/puter/issues/1303, github.com/arbs-io/vscode-openai/issues/358); DESIGN.md section 12 says 400, so
 * the status is the fake's `responsesOnlyStatus`.
 */
export function responsesOnlyRefusal(status: 400 | 404): OpenAiRefusal {
  return refusal(status, 'This model is only supported in v1/responses and not in v1/chat/completions.', 'model', null);
}

/** OpenAI's 400 for a body that is not a JSON object (its message word for word, as clients quote it). */
export const UNPARSEABLE_BODY = refusal(
  400,
  "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)",
  null,
  null,
);

/**
 * Chat's output limits on Responses: 400 `unsupported_parameter` pointing at `max_output_tokens`. OpenAI's wording for
 * `max_completion_tokens` is quoted by its clients ("Unsupported parameter: 'max_completion_tokens'. In the Responses API,
 * this parameter has moved to 'max_output_tokens'."); `max_tokens` gets the same sentence here.
 */
const MOVED_TO_MAX_OUTPUT_TOKENS = ['max_tokens', 'max_completion_tokens'];

/**
 * OpenAI's refusal of a Responses body, or null: chat's output limits (above), a top-level field that CreateResponse does
 * not name ("Unknown parameter: 'x'.", code `unknown_parameter`, as OpenAI names unknown fields on Responses, e.g.
 * `{"code":"unknown_parameter","message":"Unknown parameter: 'input[3].status'.","param":"input[3].status"}` quoted in
 * github.com/1jehuang/jcode/issues/1028), a service tier OpenAI does not take, then the CreateResponse schema
 * (openai-request-check.ts). `undocumented` are fields OpenAI takes beyond its schema: they are not checked.
 */
export function responsesBodyProblem(body: Record<string, unknown>, undocumented: ReadonlySet<string>): OpenAiRefusal | null {
  const moved = MOVED_TO_MAX_OUTPUT_TOKENS.find((field) => field in body);
  if (moved) return refusal(400, `Unsupported parameter: '${moved}'. In the Responses API, this parameter has moved to 'max_output_tokens'.`, moved, 'unsupported_parameter');
  const known = requestFields('CreateResponse');
  const unknown = Object.keys(body).find((field) => !known.has(field) && !undocumented.has(field));
  if (unknown !== undefined) return refusal(400, `Unknown parameter: '${unknown}'.`, unknown, 'unknown_parameter');
  const checked = Object.fromEntries(Object.entries(body).filter(([field]) => !undocumented.has(field)));
  const problem: OpenAiError | null = serviceTierRefusal(body.service_tier) ?? openAiRequestProblem('CreateResponse', checked);
  return problem ? { status: 400, body: problem } : null;
}

/**
 * A `previous_response_id` the fake did not store (never issued, or answered with `store: false`): OpenAI's 400, as
 * github.com/maximhq/bifrost/issues/2441 quotes it (`previous_response_not_found`, "Previous response with id '…' not
 * found."); that quote has no `param`, clients' tests of OpenAI's WebSocket error events have `previous_response_id`.
 */
export function previousResponseNotFound(id: string): OpenAiRefusal {
  return refusal(400, `Previous response with id '${id}' not found.`, 'previous_response_id', 'previous_response_not_found');
}

/**
 * An input item given by id only (a reasoning item without encrypted_content, an `item_reference`) that the fake did not
 * store: OpenAI's 404, word for word as github.com/can1357/oh-my-pi/issues/41 and its clients' tests quote it.
 */
export function itemNotFound(id: string): OpenAiRefusal {
  return refusal(404, `Item with id '${id}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`, 'input', null);
}

/**
 * Encrypted reasoning that is not, byte for byte, one the fake issued: OpenAI's 400 `invalid_encrypted_content`, the
 * content quoted by its first and last four characters ("The encrypted content gAAA...DQ== could not be verified.",
 * github.com/openai/codex/issues/8145; since 2026 with "Reason: Encrypted content could not be decrypted or parsed.",
 * github.com/Wei-Shaw/sub2api/issues/2863, github.com/edison7009/EchoBird/issues/255).
 */
export function encryptedContentRefusal(content: string): OpenAiRefusal {
  const quoted = `${content.slice(0, 4)}...${content.slice(-4)}`;
  return refusal(400, `The encrypted content ${quoted} could not be verified. Reason: Encrypted content could not be decrypted or parsed.`, null, 'invalid_encrypted_content');
}

/**
 * A tool's output in `input` whose `call_id` no call of its kind in `input` has: OpenAI's 400, word for word as
 * github.com/continuedev/continue/issues/10092 quotes it whole for a function_call_output ("No tool call found for function
 * call output with call_id call_….", param `input`, code null; the same sentence in
 * community.openai.com/t/issue-with-new-responses-api-400-no-tool-call-found-for-function-call-output-with-call-id/1142327).
 * No public quote has it for a custom_tool_call_output: the same sentence with that item's name.
 */
export function toolCallNotFound(itemType: 'function_call_output' | 'custom_tool_call_output', callId: string): OpenAiRefusal {
  const output = itemType === 'function_call_output' ? 'function call output' : 'custom tool call output';
  return refusal(400, `No tool call found for ${output} with call_id ${callId}.`, 'input', null);
}
