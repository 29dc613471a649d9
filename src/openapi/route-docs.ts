import { ErrorCode } from '../common/errors';

export type RouteAuth = 'api_key' | 'admin_token' | 'none';
type Schema = Record<string, unknown>;

/** What the OpenAPI document says of one route beyond what Nest's scan finds: the contract of DESIGN.md. */
export interface RouteDoc {
  tag: string;
  summary: string;
  auth: RouteAuth;
  /** Error codes this route answers with, besides the ones every route of its kind shares. */
  errors: ErrorCode[];
  requestBody?: { contentType: string; schema: Schema };
  /** Query parameters by name, with their description. */
  query?: Record<string, string>;
  /** Success status and the media types of its body. */
  success: { status: number; description: string; content?: Record<string, Schema> };
}

const E = ErrorCode;
const string = { type: 'string' };
const number = { type: 'number' };
const usd = { oneOf: [{ type: 'number' }, { type: 'string', pattern: '^\\d+(\\.\\d{1,6})?$' }], description: 'USD, at most 6 decimals' };
const json = (schema: Schema) => ({ 'application/json': schema });
const object = (properties: Record<string, Schema>, required: string[] = [], additionalProperties = false): Schema => ({
  type: 'object',
  properties,
  // OpenAPI 3.0 wants `required` absent rather than empty.
  ...(required.length ? { required } : {}),
  additionalProperties,
});

const usagePeriod = {
  from: 'Start, inclusive (YYYY-MM-DD, or an RFC 3339 timestamp with Z or ±HH:MM); default: the start of this UTC month',
  to: 'End, exclusive (same format); a date-only value covers that whole UTC day; default: now',
};
const usageSummary = object({
  from: string,
  to: string,
  totals: { type: 'object' },
  by_key: { type: 'array', items: { type: 'object' } },
  by_model: { type: 'array', items: { type: 'object' } },
  daily: { type: 'array', items: { type: 'object' } },
  latest: { type: 'array', items: { type: 'object' } },
});
const account = object({
  id: string,
  name: string,
  credits_usd: string,
  reserved_usd: string,
  monthly_limit_usd: { type: 'string', nullable: true },
  month_spend_usd: string,
  subscription: object({ status: { type: 'string', enum: ['none', 'trial', 'active'] }, ends_at: { type: 'string', nullable: true } }),
  fair_use: object({ used: number, allowance: number, resets_at: string }),
});
const adminBodyErrors = [E.InvalidJson, E.InvalidRequest, E.PayloadTooLarge];

/** Every route the gateway serves, keyed by "METHOD /path" as the OpenAPI document writes it. */
export const ROUTE_DOCS: Record<string, RouteDoc> = {
  'POST /v1/chat/completions': {
    tag: 'v1',
    summary: 'Chat completion, optionally streamed as SSE; billed per token from prepaid credits',
    auth: 'api_key',
    errors: [
      E.InvalidJson, E.InvalidRequest, E.MissingModel, E.UnknownModel, E.ModelNotHosted, E.UpstreamRejected,
      E.InsufficientCredits, E.MonthlyLimitReached, E.NotFound, E.PayloadTooLarge, E.RateLimitExceeded, E.UpstreamError,
    ],
    requestBody: {
      contentType: 'application/json',
      schema: object(
        {
          model: { type: 'string', description: 'A chat model id of GET /v1/models' },
          messages: { type: 'array', items: object({ role: string, content: {} }, ['role'], true) },
          stream: { type: 'boolean' },
          stream_options: object({ include_usage: { type: 'boolean' } }),
          max_tokens: { type: 'integer' },
          max_completion_tokens: { type: 'integer' },
          temperature: number,
        },
        ['model', 'messages'],
        true,
      ),
    },
    success: {
      status: 200,
      description: 'A chat.completion object with usage, or chat.completion.chunk SSE events ending in [DONE]',
      content: { 'application/json': { type: 'object' }, 'text/event-stream': string },
    },
  },
  'POST /v1/audio/transcriptions': {
    tag: 'v1',
    summary: 'Transcription by the active speech-to-text model (included in subscription and trial)',
    auth: 'api_key',
    errors: [
      E.InvalidUpload, E.MissingFile, E.UnsupportedFileFormat, E.InvalidResponseFormat, E.UpstreamRejected,
      E.SubscriptionRequired, E.FairUseLimitReached, E.NotFound, E.PayloadTooLarge, E.RequestTimeout, E.UpstreamError,
      E.UpstreamUnavailable, E.UpstreamTimeout,
    ],
    requestBody: {
      contentType: 'multipart/form-data',
      schema: object(
        {
          file: { type: 'string', format: 'binary', description: 'flac, m4a, mp3, mp4, mpeg, mpga, oga, ogg, wav or webm; at most 4 MB' },
          model: { type: 'string', description: 'Accepted and ignored: the active transcription model serves every call' },
          response_format: { type: 'string', enum: ['json', 'text', 'verbose_json'] },
          language: string,
        },
        ['file'],
      ),
    },
    success: {
      status: 200,
      description: 'json: {text}; text: the transcript; verbose_json: language, duration, text, segments',
      content: { 'application/json': { type: 'object' }, 'text/plain': string },
    },
  },
  'POST /v1/audio/speech': {
    tag: 'v1',
    summary: 'Speech synthesis (included in subscription and trial); the audio is streamed as it is produced',
    auth: 'api_key',
    errors: [
      E.InvalidRequest, E.MissingModel, E.MissingInput, E.InvalidInput, E.UnknownModel, E.InputTooLong,
      E.UnsupportedResponseFormat, E.UpstreamRejected, E.SubscriptionRequired, E.FairUseLimitReached, E.NotFound,
      E.PayloadTooLarge, E.UpstreamError,
    ],
    requestBody: {
      contentType: 'application/json',
      schema: object(
        {
          model: { type: 'string', description: 'A speech model id of GET /v1/models' },
          input: { type: 'string', description: 'At most limits.speech_max_input_chars characters' },
          voice: { type: 'string', description: "One of the model's voices; default: its first" },
          response_format: { type: 'string', enum: ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] },
          speed: { type: 'number', minimum: 0.25, maximum: 4 },
        },
        ['model', 'input'],
      ),
    },
    success: {
      status: 200,
      description: 'The audio in the requested format',
      content: { 'audio/mpeg': string, 'audio/ogg': string, 'audio/aac': string, 'audio/flac': string, 'audio/wav': string, 'audio/pcm': string },
    },
  },
  'GET /v1/models': {
    tag: 'v1',
    summary: 'The model catalog (the same for every account); other methods answer 405',
    auth: 'api_key',
    errors: [E.MethodNotAllowed],
    success: {
      status: 200,
      description: 'ListModelsResponse',
      content: json(object({ object: { type: 'string', enum: ['list'] }, data: { type: 'array', items: object({ id: string, object: string, created: number, owned_by: string }) } })),
    },
  },
  'GET /v1/usage': {
    tag: 'v1',
    summary: "The calling account's usage per key, per model and per day, and its latest requests",
    auth: 'api_key',
    query: usagePeriod,
    errors: [E.InvalidRequest],
    success: { status: 200, description: 'Usage summary of the key\'s account', content: json(usageSummary) },
  },
  'POST /admin/v1/accounts': {
    tag: 'admin',
    summary: 'Create an account (no credits, no spending limit, no subscription)',
    auth: 'admin_token',
    errors: adminBodyErrors,
    requestBody: { contentType: 'application/json', schema: object({ name: { type: 'string', maxLength: 200 } }, ['name']) },
    success: { status: 201, description: 'The account', content: json(account) },
  },
  'GET /admin/v1/accounts/{id}': {
    tag: 'admin',
    summary: 'Show an account: credits, reserved, monthly limit and spend, subscription, fair use',
    auth: 'admin_token',
    errors: [E.NotFound],
    success: { status: 200, description: 'The account', content: json(account) },
  },
  'POST /admin/v1/accounts/{id}/keys': {
    tag: 'admin',
    summary: 'Create an API key; the full key is shown only in this answer',
    auth: 'admin_token',
    errors: [...adminBodyErrors, E.NotFound],
    requestBody: { contentType: 'application/json', schema: object({ name: { type: 'string', maxLength: 200 } }) },
    success: { status: 201, description: 'The key', content: json(object({ id: string, key: string, created_at: string })) },
  },
  'GET /admin/v1/accounts/{id}/keys': {
    tag: 'admin',
    summary: "List an account's keys, without secrets",
    auth: 'admin_token',
    errors: [E.NotFound],
    success: { status: 200, description: 'The keys', content: json({ type: 'array', items: { type: 'object' } }) },
  },
  'DELETE /admin/v1/keys/{id}': {
    tag: 'admin',
    summary: 'Revoke a key (refused by every replica within 2 s)',
    auth: 'admin_token',
    errors: [E.NotFound],
    success: { status: 200, description: 'The revoked key', content: json({ type: 'object' }) },
  },
  'POST /admin/v1/accounts/{id}/credits': {
    tag: 'admin',
    summary: 'Add credits',
    auth: 'admin_token',
    errors: [...adminBodyErrors, E.NotFound],
    requestBody: { contentType: 'application/json', schema: object({ amount_usd: usd }, ['amount_usd']) },
    success: { status: 200, description: 'The account', content: json(account) },
  },
  'PUT /admin/v1/accounts/{id}/spending-limit': {
    tag: 'admin',
    summary: 'Set or clear (null) the monthly spending limit',
    auth: 'admin_token',
    errors: [...adminBodyErrors, E.NotFound],
    requestBody: { contentType: 'application/json', schema: object({ monthly_limit_usd: { ...usd, nullable: true } }, ['monthly_limit_usd']) },
    success: { status: 200, description: 'The account', content: json(account) },
  },
  'PUT /admin/v1/accounts/{id}/subscription': {
    tag: 'admin',
    summary: 'Set the subscription: trial (14 days, once per account), active (until ends_at or changed) or none',
    auth: 'admin_token',
    errors: [...adminBodyErrors, E.NotFound],
    requestBody: {
      contentType: 'application/json',
      schema: object({ status: { type: 'string', enum: ['trial', 'active', 'none'] }, ends_at: { type: 'string', format: 'date-time' } }, ['status']),
    },
    success: { status: 200, description: 'The account', content: json(account) },
  },
  'GET /admin/v1/accounts/{id}/usage': {
    tag: 'admin',
    summary: 'Usage of an account per key, per model and per day, and its latest requests',
    auth: 'admin_token',
    query: usagePeriod,
    errors: [E.InvalidRequest, E.NotFound],
    success: { status: 200, description: 'Usage summary', content: json(object({ account_id: string, ...(usageSummary.properties as Schema) })) },
  },
  'GET /metrics': {
    tag: 'operations',
    summary: 'Prometheus metrics (text exposition format)',
    auth: 'admin_token',
    errors: [],
    success: { status: 200, description: 'Metrics', content: { 'text/plain': string } },
  },
  'GET /healthz': {
    tag: 'operations',
    summary: 'Liveness: the process serves HTTP',
    auth: 'none',
    errors: [],
    success: { status: 200, description: 'Up', content: json(object({ status: string })) },
  },
  'GET /readyz': {
    tag: 'operations',
    summary: 'Readiness: the database answers (503 when it does not)',
    auth: 'none',
    errors: [],
    success: { status: 200, description: 'Ready', content: json(object({ status: string })) },
  },
};
