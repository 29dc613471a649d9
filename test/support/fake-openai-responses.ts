import { FakeReply, ProjectTier, RecordedRequest, ResponsesRecord, servedServiceTier } from './fake-openai-wire';
import { FakeWebSearch, planResponse, ResponseObject } from './fake-openai-responses-answer';
import { newReasoningKey, openReasoning } from './fake-openai-responses-reasoning';
import {
  DEFAULT_RESPONSES_ONLY_MODELS,
  encryptedContentRefusal,
  isResponsesOnly,
  itemNotFound,
  OpenAiRefusal,
  previousResponseNotFound,
  responsesBodyProblem,
  responsesOnlyRefusal,
  toolCallNotFound,
  UNPARSEABLE_BODY,
} from './fake-openai-responses-refusals';
import { responseEvents, ResponsesAnswerContext, writeJsonAnswer, writeResponseEvents } from './fake-openai-responses-stream';

/**
 * OpenAI's Responses API in the fake OpenAI (fake-upstream.ts: `fake.responses`), as strict as OpenAI: POST /v1/responses
 * checked against CreateResponse (refusals in fake-openai-responses-refusals.ts), answered with a `response` object or its
 * SSE events (fake-openai-responses-answer.ts, fake-openai-responses-stream.ts) from the fake's `reply`, reasoning sealed
 * so that only what the fake issued comes back (fake-openai-responses-reasoning.ts); and Responses-only models refused on
 * /v1/chat/completions. Documented in docs/chat-testing.md; proven with the openai SDK in
 * test/fake-openai-responses.e2e-spec.ts.
 */

export type { ResponsesAnswerContext } from './fake-openai-responses-stream';
export type { FakeWebSearch, ResponseObject } from './fake-openai-responses-answer';
export { DEFAULT_RESPONSES_ONLY_MODELS } from './fake-openai-responses-refusals';

/**
 * Fields OpenAI takes on /v1/responses though neither its schema nor its SDK names them: the Codex CLI sends
 * `client_metadata` (its installation, session and turn ids; test/fixtures/clients/codex-0.171.0.responses.json) to
 * api.openai.com with an API key (github.com/openai/codex/pull/27122), and is served. Not checked, only let through.
 */
export const UNDOCUMENTED_FIELDS = ['client_metadata'];

/** What the Responses API reads of the fake OpenAI it belongs to: the reply, and how the service tier is served. */
export interface ResponsesHost {
  reply: FakeReply;
  downgradePriority: boolean;
  projectTier: ProjectTier;
}

type Item = Record<string, unknown>;

export class FakeResponsesApi {
  /** Models refused on /v1/chat/completions with OpenAI's "only supported in v1/responses" (their snapshots too). */
  responsesOnlyModels = new Set(DEFAULT_RESPONSES_ONLY_MODELS);
  /** The status of that refusal: 404, as every quoted OpenAI answer has it; 400 as DESIGN.md section 12 words it. */
  responsesOnlyStatus: 400 | 404 = 404;
  /**
   * Reasoning items carry encrypted_content even without `include: ["reasoning.encrypted_content"]` (the 2026 schema
   * says "populated by default"; its `include` docs still say the include adds it). Off: only when included.
   */
  encryptedContentByDefault = false;
  /** Top-level fields let through unchecked beside CreateResponse's (UNDOCUMENTED_FIELDS). */
  undocumentedFields = new Set(UNDOCUMENTED_FIELDS);
  /** The reply to each request chosen from its body (undefined: the fake's `reply`), for a scripted tool loop. */
  replyFor: ((body: Record<string, any>) => FakeReply | undefined) | null = null;
  /**
   * The web searches OpenAI's platform runs for a request that offers the web search tool: a completed `web_search_call`
   * item each, before the answer (streamed with `response.web_search_call.in_progress`, `.searching`, `.completed`).
   */
  webSearches: FakeWebSearch[] = [];
  /** The key of the reasoning the fake issues; another key's reasoning does not verify. */
  reasoningKey: Buffer = newReasoningKey();
  /** Ids of the responses and output items answered with `store` on: all that previous_response_id or an item by id may name. */
  readonly stored = new Set<string>();
  /** Every response answered since the last reset, in order, as its final event carries it: what a client was given back. */
  readonly answered: ResponseObject[] = [];

  constructor(private readonly host: ResponsesHost) {}

  /** The defaults back and nothing stored (the key stays: reasoning issued before verifies after). */
  reset(): void {
    this.responsesOnlyModels = new Set(DEFAULT_RESPONSES_ONLY_MODELS);
    this.responsesOnlyStatus = 404;
    this.encryptedContentByDefault = false;
    this.undocumentedFields = new Set(UNDOCUMENTED_FIELDS);
    this.replyFor = null;
    this.webSearches = [];
    this.stored.clear();
    this.answered.splice(0);
  }

  /**
   * OpenAI's refusal of the request, or null: a Responses-only model on chat completions; on /v1/responses a body that is
   * no JSON object, the body checks, a previous_response_id or an item by id the fake did not store, reasoning that is
   * not what the fake issued. What a Responses request asked is recorded on `record.responses`, refused or not.
   */
  refusal(method: string | undefined, record: RecordedRequest): OpenAiRefusal | null {
    if (method !== 'POST') return null;
    if (record.path === '/v1/chat/completions') return isResponsesOnly(this.responsesOnlyModels, record.body?.model) ? responsesOnlyRefusal(this.responsesOnlyStatus) : null;
    if (record.path !== '/v1/responses') return null;
    const body: unknown = record.body;
    if (!isObject(body)) return UNPARSEABLE_BODY;
    const { asked, problem } = this.inputProblems(body);
    record.responses = asked;
    return responsesBodyProblem(body, this.undocumentedFields) ?? problem;
  }

  /** Answers a request that `refusal` let through, as JSON or as SSE events, and stores its ids unless `store` is false. */
  async answer(record: RecordedRequest, ctx: ResponsesAnswerContext): Promise<void> {
    const body: Record<string, any> = record.body;
    const reply = this.replyFor?.(body) ?? this.host.reply;
    const servedTier = servedServiceTier(body.service_tier, this.host.downgradePriority, this.host.projectTier);
    const planned = planResponse(body, reply, { reasoningKey: this.reasoningKey, encryptedByDefault: this.encryptedContentByDefault, servedTier, webSearches: this.webSearches });
    if (record.responses) record.responses.responseId = planned.response.id;
    this.answered.push(planned.response);
    if (body.store !== false) [planned.response, ...planned.response.output].forEach(({ id }) => this.stored.add(id));
    if (body.stream !== true) return writeJsonAnswer(planned.response, ctx);
    const obfuscate = body.stream_options?.include_obfuscation !== false;
    return writeResponseEvents(responseEvents(planned, { pieces: reply.argumentPieces ?? 2, obfuscate }), ctx);
  }

  /**
   * POST /_fake/responses-only-models {"models": [...]}, /_fake/responses-only-status {"status": 400 | 404} and
   * /_fake/encrypted-by-default {"on": bool}, for a fake run as its own process; true when `path` was one of them.
   */
  control(path: string, body: { models?: string[]; status?: number; on?: boolean }): boolean {
    if (path === '/_fake/responses-only-models') this.responsesOnlyModels = new Set(body.models ?? []);
    else if (path === '/_fake/responses-only-status') this.responsesOnlyStatus = body.status === 400 ? 400 : 404;
    else if (path === '/_fake/encrypted-by-default') this.encryptedContentByDefault = body.on === true;
    else return false;
    return true;
  }

  /**
   * What the request asked (ResponsesRecord), and the first refusal its state asks for: a previous_response_id not stored
   * (400), then in input order a reasoning item whose encrypted_content the fake did not issue (400), an item given by id
   * only (a reasoning item without encrypted_content, an `item_reference`) that it did not store (404), or a tool's output
   * whose call_id no call of its kind in `input` has (400: OpenAI pairs them within the request).
   */
  private inputProblems(body: Record<string, unknown>): { asked: ResponsesRecord; problem: OpenAiRefusal | null } {
    const previous = typeof body.previous_response_id === 'string' ? body.previous_response_id : null;
    const asked: ResponsesRecord = {
      store: body.store !== false,
      include: Array.isArray(body.include) ? body.include.filter((v): v is string => typeof v === 'string') : [],
      previousResponseId: previous,
      reasoningItems: [],
      reasoningIntact: null,
      responseId: null,
    };
    let problem = previous !== null && !this.stored.has(previous) ? previousResponseNotFound(previous) : null;
    const items: Item[] = Array.isArray(body.input) ? body.input.filter(isObject) : [];
    const calls = { function_call_output: callIds(items, 'function_call'), custom_tool_call_output: callIds(items, 'custom_tool_call') };
    for (const item of items) {
      const id = typeof item.id === 'string' ? item.id : null;
      if (item.type === 'reasoning') {
        const sealed = item.encrypted_content;
        const encrypted = typeof sealed === 'string';
        const intact = encrypted && openReasoning(this.reasoningKey, sealed) !== null;
        asked.reasoningItems.push({ id, encrypted, intact });
        if (encrypted && !intact) problem ??= encryptedContentRefusal(sealed);
        if (!encrypted && id !== null && !this.stored.has(id)) problem ??= itemNotFound(id);
      } else if ((item.type === 'item_reference' || item.type === undefined || item.type === null) && id !== null && !('role' in item) && !this.stored.has(id)) {
        problem ??= itemNotFound(id);
      } else if (item.type === 'function_call_output' || item.type === 'custom_tool_call_output') {
        if (!calls[item.type].has(item.call_id)) problem ??= toolCallNotFound(item.type, String(item.call_id));
      }
    }
    asked.reasoningIntact = asked.reasoningItems.length ? asked.reasoningItems.every((r) => r.intact) : null;
    return { asked, problem };
  }
}

/** The call_ids of the input's calls of this type. */
function callIds(items: Item[], type: string): Set<unknown> {
  return new Set(items.filter((item) => item.type === type).map((item) => item.call_id));
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
