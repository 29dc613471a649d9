import fc from 'fast-check';
import { SPEECH_FORMATS } from '../../src/config/gateway-config.schema';
import { absent, arrayOf, extraEntries, field, FieldArbitrary, hostileBody, hostileNumber, hostileStructure, hostileValue, int, messageText, objectOf, oneOfValues, optional, Piece, valid } from './fuzz-json';
import { messagesBody } from './fuzz-messages';
import { responsesBody } from './fuzz-responses';

/** One generated request; printed (shortened) as the counterexample when the contract fails. */
export interface FuzzRequest {
  route: string;
  method: 'GET' | 'POST' | 'PUT';
  /** Path with its query string, raw (already percent-encoded where meant to be). */
  path: string;
  auth: 'apiKey' | 'admin';
  contentType?: string;
  body?: string;
  /** What is hostile about it; empty for a request that should succeed or fail only on business rules. */
  hostile: readonly string[];
}

/** What the generated requests aim at: the models and accounts the suite set up. */
export interface FuzzTargets {
  chatModels: string[];
  speechModel: string;
  voices: string[];
  /** An account the admin requests may change freely (not the one whose key sends the /v1 requests). */
  adminAccountId: string;
}

const SHOWN_BODY_CHARS = 300;

export function describeRequest(r: FuzzRequest): string {
  const body = r.body === undefined ? '' : ` body(${r.body.length} chars)=${r.body.length > SHOWN_BODY_CHARS ? `${r.body.slice(0, SHOWN_BODY_CHARS)}…` : r.body}`;
  const type = r.contentType === 'application/json' ? '' : ` content-type=${r.contentType ?? '(none)'}`;
  return `${r.method} ${r.path.length > 400 ? `${r.path.slice(0, 400)}…` : r.path}${type} hostile=[${r.hostile.join('; ')}]${body}`;
}

/** Gives the request a short printed form (fast-check prints counterexamples with it). */
function printable(r: FuzzRequest): FuzzRequest {
  return Object.assign(r, { [fc.toStringMethod]: () => describeRequest(r) });
}

/** Mostly application/json; sometimes what a client may wrongly send with a JSON body. */
const contentType = fc.oneof(
  { weight: 12, arbitrary: fc.constant<[string | undefined, string[]]>(['application/json', []]) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<[string | undefined, string[]]>(
      [undefined, ['no content-type']],
      ['text/plain', ['content-type text/plain']],
      ['application/json; charset=utf-16', ['content-type charset utf-16']],
      ['multipart/form-data; boundary=x', ['content-type multipart with a JSON body']],
      ['application/x-www-form-urlencoded', ['content-type form-urlencoded']],
    ),
  },
);

/** A JSON route's request: usually the DTO-shaped object, sometimes a hostile whole body. */
function jsonRequest(route: string, method: 'POST' | 'PUT', path: fc.Arbitrary<[string, string[]]>, auth: FuzzRequest['auth'], body: fc.Arbitrary<Piece>) {
  return fc
    .tuple(path, fc.oneof({ weight: 8, arbitrary: body }, { weight: 1, arbitrary: hostileBody() }), contentType)
    .map(([[p, pathHostile], b, [type, typeHostile]]) =>
      printable({ route, method, path: p, auth, contentType: type, body: b.text, hostile: [...pathHostile, ...b.hostile, ...typeHostile] }),
    );
}

// --- chat ---------------------------------------------------------------------------------------

const message = objectOf({
  role: field(oneOfValues('user', 'system', 'assistant'), hostileValue(), 20),
  content: fc.oneof(
    { weight: 20, arbitrary: messageText },
    // Content parts, as vision and multi-part clients send them (counted by dev-echo, passed on by the others).
    { weight: 3, arbitrary: fc.array(objectOf({ type: field(oneOfValues('text', 'image_url')), text: messageText }), { minLength: 1, maxLength: 3 }).map(arrayOf) },
    { weight: 1, arbitrary: hostileStructure() },
  ),
});

const messages = fc.oneof(
  { weight: 12, arbitrary: fc.array(message, { minLength: 1, maxLength: 3 }).map((items) => arrayOf(items)) },
  { weight: 1, arbitrary: hostileValue() },
  { weight: 1, arbitrary: fc.array(hostileValue(), { minLength: 1, maxLength: 2 }).map((items) => arrayOf(items)) },
);


/** Chat bodies have nine fields: each is hostile less often, so that about half the bodies are valid. */
const CHAT_VALID_WEIGHT = 12;
const chatField = (validValues: fc.Arbitrary<Piece | undefined>, hostile?: fc.Arbitrary<Piece>) => field(validValues, hostile, CHAT_VALID_WEIGHT);
const positiveOrNull = (max: number): FieldArbitrary => chatField(fc.oneof(absent, int(1, max), fc.constant(valid(null))), fc.oneof(hostileNumber(), hostileValue()));

function chatBody(targets: FuzzTargets): fc.Arbitrary<Piece> {
  return objectOf(
    {
      model: chatField(
        oneOfValues(...targets.chatModels),
        fc.oneof(
          hostileValue(),
          oneOfValues('no-such-model').map((p) => ({ ...p, hostile: ['unknown model'] })),
          fc.constant({ text: JSON.stringify(targets.speechModel), hostile: ['speech model on chat'] }),
          fc.constant({ text: JSON.stringify(`${targets.chatModels[0]}\u0000`), hostile: ['model with NUL'] }),
          fc.constant({ text: JSON.stringify(`x${'\ud800'.repeat(3)}`), hostile: ['model with lone surrogates'] }),
          fc.constant({ text: JSON.stringify('m'.repeat(50_000)), hostile: ['50,000-character model'] }),
        ),
      ),
      messages: messages,
      stream: chatField(optional(fc.boolean().map(valid))),
      stream_options: chatField(fc.oneof(absent, fc.constant(valid(null)), objectOf({ include_usage: chatField(optional(fc.boolean().map(valid))) }))),
      max_tokens: positiveOrNull(200),
      max_completion_tokens: positiveOrNull(200),
      n: positiveOrNull(2),
      // Passed to the upstream untouched: still parsed, validated for shape, and serialized again.
      temperature: chatField(optional(fc.double({ min: 0, max: 2, noNaN: true }).map(valid))),
      metadata: fc.oneof({ weight: CHAT_VALID_WEIGHT, arbitrary: absent }, { weight: 1, arbitrary: hostileValue() }),
    },
    extraEntries(['model', 'n', 'max_tokens', 'stream']),
  );
}

// --- speech -------------------------------------------------------------------------------------

function speechBody(targets: FuzzTargets): fc.Arbitrary<Piece> {
  return objectOf(
    {
      model: field(oneOfValues(targets.speechModel), fc.oneof(hostileValue(), oneOfValues(...targets.chatModels).map((p) => ({ ...p, hostile: ['chat model on speech'] })))),
      input: field(
        fc.string({ minLength: 1, maxLength: 60 }).map(valid),
        fc.oneof(
          hostileValue(),
          fc.constantFrom(
            { text: JSON.stringify('a'.repeat(4_096)), hostile: ['input at the 4,096 limit'] },
            { text: JSON.stringify('a'.repeat(4_097)), hostile: ['input over the limit'] },
            { text: JSON.stringify('😀'.repeat(4_096)), hostile: ['4,096 emoji (8,192 UTF-16 units)'] },
          ),
        ),
      ),
      voice: field(optional(oneOfValues(...targets.voices))),
      response_format: field(optional(oneOfValues(...SPEECH_FORMATS))),
      speed: field(optional(fc.double({ min: 0.25, max: 4, noNaN: true }).map(valid)), fc.oneof(hostileNumber(), hostileValue())),
    },
    extraEntries(['model', 'speed', 'input']),
  );
}

// --- admin --------------------------------------------------------------------------------------

const name = field(fc.string({ minLength: 1, maxLength: 60 }).filter((s) => s.trim() !== '' && !s.includes('\u0000')).map(valid), fc.oneof(
  hostileValue(),
  fc.constantFrom({ text: JSON.stringify('n'.repeat(201)), hostile: ['201-character name'] }, { text: JSON.stringify('n'.repeat(200)), hostile: [] }),
));

/** USD as a number or decimal string with at most 6 decimals, as the DTO allows. */
const usdAmount = fc.oneof(
  fc.integer({ min: 1, max: 1_000_000_000 }).map((micros) => valid(micros / 1_000_000)),
  fc.integer({ min: 1, max: 1_000_000_000 }).map((micros) => valid((micros / 1_000_000).toFixed(6))),
  fc.integer({ min: 1, max: 1_000 }).map(valid),
);

const hostileUsd = fc.oneof(
  hostileNumber(),
  hostileValue(),
  fc.constantFrom('1e3', '0.0000001', '-1', '+1', '1.', '.5', ' 1', '1,5', `1${'0'.repeat(30)}`, '0x1', '١٢', '99999999999999.999999').map((s) => ({ text: JSON.stringify(s), hostile: [`amount string ${JSON.stringify(s)}`] })),
);

const isoInstant = fc
  .date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true })
  .map((d) => d.toISOString());

/** Strings a lenient date parser may take and a database may not: week dates, compact dates, years out of range. */
const ODD_DATES = [
  '2026-W05',
  '2026-W05-1',
  '20261123',
  '2026-123',
  '+275760-09-13T00:00:00.000Z',
  '-271821-04-20T00:00:00.000Z',
  '+010000-01-01',
  '-000001-01-01',
  '0000-01-01',
  '9999-12-31T23:59:59.999Z',
  '2026-02-30',
  '2026-13-01',
  '2026-01-01T25:00:00Z',
  '2026-01-01T00:00:00+99:99',
  '2026-01-01T00:00:00.1234567890123Z',
  '1970-01-01',
  '2026',
  '2026-01',
  'now',
];
const hostileDate = fc.oneof(fc.constantFrom(...ODD_DATES).map((s) => ({ text: JSON.stringify(s), hostile: [`date ${s}`] })), hostileValue());

/** The admin routes' `:id`: mostly the target account, sometimes one that does not exist or is no id. */
function accountPath(targets: FuzzTargets, suffix: string): fc.Arbitrary<[string, string[]]> {
  return fc.oneof(
    { weight: 10, arbitrary: fc.constant<[string, string[]]>([`/admin/v1/accounts/${targets.adminAccountId}${suffix}`, []]) },
    { weight: 1, arbitrary: fc.uuid().map((id): [string, string[]] => [`/admin/v1/accounts/${id}${suffix}`, ['unknown account id']]) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom('not-a-uuid', '%00', '%ED%A0%80', '..%2F..', 'x'.repeat(2_000), '00000000-0000-0000-0000-000000000000')
        .map((id): [string, string[]] => [`/admin/v1/accounts/${id}${suffix}`, [`account id ${id.slice(0, 20)}`]]),
    },
  );
}

// --- the JSON routes ------------------------------------------------------------------------------

export function jsonRoutes(targets: FuzzTargets): Record<string, fc.Arbitrary<FuzzRequest>> {
  const fixed = (path: string) => fc.constant<[string, string[]]>([path, []]);
  return {
    'POST /v1/chat/completions': jsonRequest('chat', 'POST', fixed('/v1/chat/completions'), 'apiKey', chatBody(targets)),
    'POST /v1/audio/speech': jsonRequest('speech', 'POST', fixed('/v1/audio/speech'), 'apiKey', speechBody(targets)),
    'POST /admin/v1/accounts': jsonRequest('admin', 'POST', fixed('/admin/v1/accounts'), 'admin', objectOf({ name }, extraEntries(['name']))),
    'POST /admin/v1/accounts/:id/keys': jsonRequest(
      'admin',
      'POST',
      accountPath(targets, '/keys'),
      'admin',
      objectOf({ name: fc.oneof(absent, name) }, extraEntries(['name'])),
    ),
    'POST /admin/v1/accounts/:id/credits': jsonRequest(
      'admin',
      'POST',
      accountPath(targets, '/credits'),
      'admin',
      objectOf({ amount_usd: field(usdAmount, hostileUsd) }, extraEntries(['amount_usd'])),
    ),
    'PUT /admin/v1/accounts/:id/spending-limit': jsonRequest(
      'admin',
      'PUT',
      accountPath(targets, '/spending-limit'),
      'admin',
      objectOf({ monthly_limit_usd: field(fc.oneof(usdAmount, fc.constant(valid(null)), fc.constant(valid(0))), hostileUsd) }, extraEntries(['monthly_limit_usd'])),
    ),
    'PUT /admin/v1/accounts/:id/subscription': jsonRequest(
      'admin',
      'PUT',
      accountPath(targets, '/subscription'),
      'admin',
      objectOf(
        {
          status: field(oneOfValues('active', 'none', 'trial')),
          ends_at: field(optional(fc.oneof(isoInstant, isoInstant.map((s) => s.slice(0, 10))).map(valid)), hostileDate),
        },
        extraEntries(['status', 'ends_at']),
      ),
    ),
    // Last, so that the routes before it keep the seeds they had (each route's seed is the run's seed plus its index).
    'POST /v1/responses': jsonRequest('responses', 'POST', fixed('/v1/responses'), 'apiKey', responsesBody(targets)),
    'POST /v1/messages': jsonRequest('messages', 'POST', fixed('/v1/messages'), 'apiKey', messagesBody(targets)),
  };
}

// --- the GET routes with parameters ---------------------------------------------------------------

/** A query parameter's raw value: percent-encoded text, or raw escapes a client may send (%00, broken UTF-8). */
const queryDate = fc.oneof(
  { weight: 4, arbitrary: fc.oneof(isoInstant, isoInstant.map((s) => s.slice(0, 10))).map((s): [string, string[]] => [encodeURIComponent(s), []]) },
  { weight: 2, arbitrary: fc.constantFrom(...ODD_DATES).map((s): [string, string[]] => [encodeURIComponent(s), [`date ${s}`]]) },
  { weight: 2, arbitrary: rawQueryValue() },
);

function rawQueryValue(): fc.Arbitrary<[string, string[]]> {
  return fc.oneof(
    fc.constantFrom<[string, string[]]>(
      ['%00', ['%00']],
      ['2026-01-01%00', ['date then %00']],
      ['%ED%A0%80', ['encoded lone surrogate']],
      ['%FF%FE', ['invalid UTF-8']],
      ['%', ['lone %']],
      ['%zz', ['bad percent escape']],
      ['', ['empty value']],
      ['+', ['plus sign']],
      [`${'9'.repeat(5_000)}`, ['5,000 digits']],
      [`${'a'.repeat(6_000)}`, ['6,000-character value']],
      ['__proto__', ['value __proto__']],
    ),
    fc.string({ unit: 'binary', maxLength: 30 }).map((s): [string, string[]] => [encodeURIComponent(s.replace(/[\ud800-\udfff]/g, '')), ['random text']]),
  );
}

/** Extra parameters: repeated names (arrays), bracket names, prototype names, many parameters. */
function extraParams(names: string[]): fc.Arbitrary<[string, string[]]> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.constant<[string, string[]]>(['', []]) },
    {
      weight: 1,
      arbitrary: fc.oneof(
        fc.constantFrom(...names).map((n): [string, string[]] => [`&${n}=2026-01-01&${n}=2026-02-01`, [`${n} repeated`]]),
        fc.constantFrom(...names).map((n): [string, string[]] => [`&${n}[]=2026-01-01`, [`${n}[]`]]),
        fc.constantFrom(...names).map((n): [string, string[]] => [`&${n}[__proto__][x]=1`, [`${n}[__proto__]`]]),
        fc.constantFrom<[string, string[]]>(
          ['&__proto__=1', ['__proto__ parameter']],
          ['&constructor=1', ['constructor parameter']],
          ['&__proto__[polluted]=1', ['__proto__[polluted] parameter']],
          ['&unknown=1', ['unknown parameter']],
          [Array.from({ length: 2_000 }, (_, i) => `&p${i}=1`).join(''), ['2,000 parameters']],
        ),
      ),
    },
  );
}

function queryOf(params: Record<string, fc.Arbitrary<[string, string[]]>>): fc.Arbitrary<[string, string[]]> {
  const names = Object.keys(params);
  return fc
    .tuple(fc.tuple(...names.map((n) => fc.option(params[n], { nil: undefined, freq: 3 }))), extraParams(names))
    .map(([values, [extra, extraHostile]]) => {
      const parts = names.flatMap((n, i) => (values[i] === undefined ? [] : [`${n}=${values[i]![0]}`]));
      const query = `${parts.join('&')}${extra}`.replace(/^&/, '');
      return [query ? `?${query}` : '', [...names.flatMap((n, i) => (values[i]?.[1] ?? []).map((h) => `${n}: ${h}`)), ...extraHostile]];
    });
}

export function queryRoutes(targets: FuzzTargets): Record<string, fc.Arbitrary<FuzzRequest>> {
  const get = (route: string, base: fc.Arbitrary<[string, string[]]>, auth: FuzzRequest['auth'], query: fc.Arbitrary<[string, string[]]>) =>
    fc.tuple(base, query).map(([[path, pathHostile], [q, qHostile]]) => printable({ route, method: 'GET', path: `${path}${q}`, auth, hostile: [...pathHostile, ...qHostile] }));
  const search = fc.oneof(
    { weight: 3, arbitrary: fc.string({ maxLength: 20 }).map((s): [string, string[]] => [encodeURIComponent(s.replace(/[\ud800-\udfff]/g, '')), []]) },
    { weight: 1, arbitrary: fc.constant<[string, string[]]>([targets.adminAccountId, []]) },
    { weight: 1, arbitrary: fc.constantFrom<[string, string[]]>([encodeURIComponent('%'), ['q is %']], [encodeURIComponent('_'), ['q is _']], ['%5C', ['backslash']], ['x'.repeat(201), ['201 characters']]) },
    { weight: 2, arbitrary: rawQueryValue() },
  );
  return {
    'GET /v1/usage': get('usage', fc.constant(['/v1/usage', []]), 'apiKey', queryOf({ from: queryDate, to: queryDate })),
    'GET /admin/v1/accounts/:id/usage': get('admin', accountPath(targets, '/usage'), 'admin', queryOf({ from: queryDate, to: queryDate })),
    'GET /dashboard/api/accounts': get('dashboard', fc.constant(['/dashboard/api/accounts', []]), 'admin', queryOf({ q: search })),
    'GET /dashboard/api/overview': get('dashboard', fc.constant(['/dashboard/api/overview', []]), 'admin', queryOf({ from: queryDate, to: queryDate })),
    'GET /admin/v1/audit': get('admin', fc.constant(['/admin/v1/audit', []]), 'admin', queryOf(auditQuery(targets))),
  };
}

/** GET /admin/v1/audit's parameters: mostly the target account, whole numbers around the bounds, and raw values. */
function auditQuery(targets: FuzzTargets): Record<string, fc.Arbitrary<[string, string[]]>> {
  const number = (min: bigint, max: bigint) => fc.bigInt({ min, max }).map((n): [string, string[]] => [String(n), []]);
  return {
    account_id: fc.oneof(
      { weight: 4, arbitrary: fc.constant<[string, string[]]>([targets.adminAccountId, []]) },
      { weight: 1, arbitrary: fc.uuid().map((id): [string, string[]] => [id, ['unknown account id']]) },
      { weight: 1, arbitrary: rawQueryValue() },
    ),
    limit: fc.oneof({ weight: 3, arbitrary: number(-5n, 250n) }, { weight: 1, arbitrary: rawQueryValue() }),
    before: fc.oneof({ weight: 3, arbitrary: number(-1n, 2n ** 64n) }, { weight: 1, arbitrary: rawQueryValue() }),
  };
}
