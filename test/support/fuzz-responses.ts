import fc from 'fast-check';
import { absent, arrayOf, extraEntries, field, FieldArbitrary, hostileNumber, hostileString, hostileStructure, hostileValue, int, messageText, objectOf, oneOfValues, optional, Piece, valid } from './fuzz-json';
import type { FuzzTargets } from './fuzz-routes';

/**
 * Bodies for `POST /v1/responses` (docs/responses.md), built like the chat bodies: each field mostly valid,
 * sometimes hostile, sometimes one of the fields the gateway refuses with 400 `unsupported_parameter`.
 * About half the bodies are valid, so that requests reach the upstream, the Response translation and billing.
 */

/** Thirteen top-level fields, each hostile rarely, so that about half the bodies pass (whole hostile bodies and content types included). */
const VALID_WEIGHT = 60;
/** Fields inside input items, tools and formats: there are many of them in one body. */
const NESTED_WEIGHT = 100;

const topField = (validValues: fc.Arbitrary<Piece | undefined>, hostile?: fc.Arbitrary<Piece>) => field(validValues, hostile, VALID_WEIGHT);
const nestedField = (validValues: fc.Arbitrary<Piece | undefined>, hostile?: fc.Arbitrary<Piece>) => field(validValues, hostile, NESTED_WEIGHT);
const named = (value: unknown, name: string): Piece => ({ text: JSON.stringify(value), hostile: [name] });
const nullable = (arb: fc.Arbitrary<Piece>) => fc.oneof({ weight: 3, arbitrary: absent }, { weight: 3, arbitrary: arb }, { weight: 1, arbitrary: fc.constant(valid(null)) });

const TOOL_NAMES = ['get_weather', 'lookup', 'search-docs', 'f'];
const callId = fc.constantFrom('call_1', 'call_abc', 'call_Xy9').map(valid);
const toolName = fc.constantFrom(...TOOL_NAMES).map(valid);
const toolArguments = fc.oneof(oneOfValues('{}', '{"city":"Paris"}', ''), fc.json({ maxDepth: 2 }).map(valid));

// --- input items --------------------------------------------------------------------------------

const inputText = objectOf({ type: fc.constant(valid('input_text')), text: nestedField(messageText) });
const outputText = objectOf({ type: fc.constant(valid('output_text')), text: nestedField(messageText), annotations: optional(fc.constant(valid([]))) });
const refusalPart = objectOf({ type: fc.constant(valid('refusal')), refusal: nestedField(messageText) });
const inputImage = objectOf({
  type: fc.constant(valid('input_image')),
  image_url: nestedField(
    oneOfValues('https://example.com/cat.png', 'data:image/png;base64,iVBORw0KGgo='),
    fc.oneof(hostileValue(), fc.constant(named('not a url', 'image_url not a URL'))),
  ),
  detail: nestedField(optional(oneOfValues('auto', 'low', 'high')), fc.oneof(hostileValue(), fc.constant(named('medium', 'unknown detail')))),
});

/** Parts the gateway refuses (uploaded files, audio) or cannot read. */
const badPart = fc.oneof(
  fc.constantFrom(
    named({ type: 'input_image', file_id: 'file_123' }, 'image by file_id (refused)'),
    named({ type: 'input_file', file_data: 'eA==' }, 'input_file part (refused)'),
    named({ type: 'input_audio', input_audio: { data: 'eA==', format: 'wav' } }, 'input_audio part (refused)'),
    named({ type: 'text', text: 'chat-style part' }, 'chat part type'),
    named({ type: 'input_text' }, 'input_text without text'),
  ),
  hostileValue(),
);

const parts = (allowed: fc.Arbitrary<Piece>) =>
  fc.array(fc.oneof({ weight: 40, arbitrary: allowed }, { weight: 1, arbitrary: badPart }), { minLength: 1, maxLength: 3 }).map(arrayOf);

/** Message content as each role may hold it: images in user messages only, earlier answers' parts in assistant messages. */
const CONTENT_BY_ROLE: Record<string, fc.Arbitrary<Piece>> = {
  user: parts(fc.oneof({ weight: 3, arbitrary: inputText }, { weight: 1, arbitrary: inputImage })),
  assistant: parts(fc.oneof({ weight: 3, arbitrary: outputText }, { weight: 1, arbitrary: inputText }, { weight: 1, arbitrary: refusalPart })),
  system: parts(inputText),
  developer: parts(inputText),
};

const messageItem = fc.constantFrom('user', 'assistant', 'system', 'developer').chain((role) =>
  objectOf({
    type: nestedField(fc.oneof(absent, oneOfValues('message'))),
    role: nestedField(fc.constant(valid(role)), fc.oneof(hostileValue(), fc.constant(named('tool', 'role tool')))),
    content: nestedField(fc.oneof({ weight: 3, arbitrary: messageText }, { weight: 2, arbitrary: CONTENT_BY_ROLE[role] }), hostileStructure()),
  }),
);

const functionCallItem = objectOf({
  type: fc.constant(valid('function_call')),
  id: optional(oneOfValues('fc_1', 'fc_2')),
  call_id: nestedField(callId),
  name: nestedField(toolName),
  arguments: nestedField(toolArguments),
});

const functionCallOutputItem = objectOf({
  type: fc.constant(valid('function_call_output')),
  call_id: nestedField(callId),
  output: nestedField(
    fc.oneof({ weight: 3, arbitrary: messageText }, { weight: 1, arbitrary: fc.array(inputText, { minLength: 1, maxLength: 2 }).map(arrayOf) }),
    fc.oneof(hostileValue(), fc.constant(named([{ type: 'input_image', image_url: 'https://example.com/a.png' }], 'image tool output (refused)'))),
  ),
});

/** Items that need stored responses or built-in tools (refused), and items that are not items. */
const badItem = fc.oneof(
  fc.constantFrom(
    named({ type: 'item_reference', id: 'msg_123' }, 'item_reference (refused)'),
    named({ type: 'web_search_call', id: 'ws_1', status: 'completed' }, 'built-in tool call item (refused)'),
    named({ type: 'function_call', name: 'f', arguments: '{}' }, 'function_call without call_id'),
    named({ role: 'user' }, 'message without content'),
  ),
  hostileValue(),
);

const inputItem = fc.oneof(
  { weight: 24, arbitrary: messageItem },
  { weight: 5, arbitrary: functionCallItem },
  { weight: 5, arbitrary: functionCallOutputItem },
  { weight: 1, arbitrary: fc.constant(valid({ type: 'reasoning', id: 'rs_1', summary: [] })) },
  { weight: 1, arbitrary: badItem },
);

const input = fc.oneof(
  { weight: 4, arbitrary: messageText },
  { weight: 8, arbitrary: fc.array(inputItem, { minLength: 1, maxLength: 4 }).map(arrayOf) },
  { weight: 1, arbitrary: fc.oneof(fc.constant(named([], 'empty input list')), hostileValue()) },
);

// --- tools and formats --------------------------------------------------------------------------

const schema = oneOfValues(
  { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  { type: 'object', properties: {} },
);

const functionTool = objectOf({
  type: fc.constant(valid('function')),
  name: nestedField(toolName, fc.oneof(hostileValue(), fc.constant(named('', 'empty tool name')))),
  description: optional(fc.string({ maxLength: 30 }).map(valid)),
  parameters: nestedField(optional(schema), hostileValue()),
  strict: optional(fc.boolean().map(valid)),
});

const builtInTool = fc.constantFrom(
  named({ type: 'web_search' }, 'web_search tool (refused)'),
  named({ type: 'file_search', vector_store_ids: ['vs_1'] }, 'file_search tool (refused)'),
  named({ type: 'code_interpreter', container: { type: 'auto' } }, 'code_interpreter tool (refused)'),
  named({ type: 'mcp', server_label: 'x', server_url: 'https://example.com' }, 'mcp tool (refused)'),
);

const tools = topField(
  fc.oneof({ weight: 3, arbitrary: absent }, { weight: 2, arbitrary: fc.array(functionTool, { minLength: 1, maxLength: 2 }).map(arrayOf) }),
  fc.oneof(
    fc.array(fc.oneof(functionTool, builtInTool), { minLength: 1, maxLength: 2 }).map((items) => arrayOf(items)),
    builtInTool.map((t) => arrayOf([t])),
    hostileValue(),
  ),
);

const toolChoice = topField(
  fc.oneof(absent, oneOfValues('auto', 'none', 'required'), toolName.map((n) => ({ text: `{"type":"function","name":${n.text}}`, hostile: [] }))),
  fc.oneof(
    hostileValue(),
    fc.constantFrom(
      named({ type: 'web_search_preview' }, 'built-in tool_choice (refused)'),
      named({ type: 'function' }, 'function tool_choice without a name'),
      named('any', 'tool_choice any'),
    ),
  ),
);

const format = fc.oneof(
  oneOfValues({ type: 'text' }, { type: 'json_object' }),
  fc.tuple(fc.constantFrom('answer', 'weather_report'), schema, optional(fc.boolean().map(valid))).map(([name, s, strict]) => ({
    text: `{"type":"json_schema","name":${JSON.stringify(name)},"schema":${s.text}${strict ? `,"strict":${strict.text}` : ''}}`,
    hostile: [],
  })),
);

const text = topField(
  fc.oneof({ weight: 2, arbitrary: absent }, { weight: 3, arbitrary: objectOf({ format: optional(format), verbosity: optional(oneOfValues('low', 'medium', 'high')) }) }),
  fc.oneof(
    hostileValue(),
    objectOf({ format: hostileValue() }),
    fc.constantFrom(
      named({ format: { type: 'xml' } }, 'unknown format type'),
      named({ format: { type: 'json_schema', name: 'x' } }, 'json_schema without a schema'),
      named({ format: { type: 'json_schema', schema: { type: 'object' } } }, 'json_schema without a name'),
    ),
  ),
);

const metadata = topField(
  fc.oneof(absent, fc.dictionary(fc.string({ minLength: 1, maxLength: 10 }), fc.string({ maxLength: 20 }), { maxKeys: 3 }).map(valid)),
  fc.oneof(
    hostileValue(),
    fc.constantFrom(
      named(Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])), 'metadata with 17 pairs'),
      named({ k: 'v'.repeat(513) }, 'metadata value of 513 characters'),
      named({ ['k'.repeat(65)]: 'v' }, 'metadata key of 65 characters'),
      named({ n: 1 }, 'metadata value a number'),
    ),
  ),
);

// --- fields the gateway accepts without serving them, or refuses ----------------------------------------

const ACCEPTED: [string, unknown][] = [
  ['store', false],
  ['background', false],
  ['include', []],
  ['truncation', 'disabled'],
  ['service_tier', 'auto'],
  ['reasoning', { effort: 'low' }],
  ['prompt_cache_key', 'fuzz'],
  ['safety_identifier', 'user-1'],
  ['max_tool_calls', 3],
];

const REFUSED: [string, unknown][] = [
  ['previous_response_id', 'resp_123'],
  ['store', true],
  ['conversation', 'conv_123'],
  ['conversation', { id: 'conv_123' }],
  ['background', true],
  ['prompt', { id: 'pmpt_123' }],
  ['include', ['reasoning.encrypted_content']],
  ['context_management', [{ type: 'compaction' }]],
  ['truncation', 'auto'],
];

const stateFields: fc.Arbitrary<[string, Piece][]> = fc.oneof(
  { weight: 24, arbitrary: fc.constant<[string, Piece][]>([]) },
  { weight: 4, arbitrary: fc.constantFrom(...ACCEPTED).map(([k, v]): [string, Piece][] => [[k, valid(v)]]) },
  { weight: 2, arbitrary: fc.constantFrom(...REFUSED).map(([k, v]): [string, Piece][] => [[k, named(v, `${k} (refused)`)]]) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...ACCEPTED.map(([k]) => k)), hostileValue()).map(([k, v]): [string, Piece][] => [[k, v]]) },
);

/** The shared extra entries (prototype names, unknown fields, duplicates) in one body of three rather than one of seven. */
const otherExtras = fc.oneof({ weight: 2, arbitrary: fc.constant<[string, Piece][]>([]) }, { weight: 1, arbitrary: extraEntries(['model', 'input', 'stream', 'max_output_tokens', 'tools']) });

const extras = fc
  .tuple(stateFields, otherExtras)
  .map(([state, more]) => [...state, ...more]);

const numberIn = (min: number, max: number): FieldArbitrary =>
  topField(nullable(fc.double({ min, max, noNaN: true }).map(valid)), fc.oneof(hostileNumber(), hostileValue()));

export function responsesBody(targets: FuzzTargets): fc.Arbitrary<Piece> {
  return objectOf(
    {
      model: topField(
        oneOfValues(...targets.chatModels),
        fc.oneof(
          hostileValue(),
          fc.constant(named('no-such-model', 'unknown model')),
          fc.constant(named(targets.speechModel, 'speech model on responses')),
          fc.constant(named(`${targets.chatModels[0]}\u0000`, 'model with NUL')),
        ),
      ),
      input: field(input, hostileStructure(), VALID_WEIGHT),
      instructions: topField(nullable(messageText), hostileValue()),
      max_output_tokens: topField(nullable(int(1, 200)), fc.oneof(hostileNumber(), hostileValue())),
      temperature: numberIn(0, 2),
      top_p: numberIn(0, 1),
      tools,
      tool_choice: toolChoice,
      parallel_tool_calls: topField(nullable(fc.boolean().map(valid))),
      text,
      stream: topField(fc.oneof({ weight: 2, arbitrary: absent }, { weight: 2, arbitrary: fc.constant(valid(true)) }, { weight: 1, arbitrary: fc.constant(valid(false)) })),
      metadata,
      user: topField(optional(fc.string({ maxLength: 20 }).map(valid)), fc.oneof(hostileString(), hostileValue())),
    },
    extras,
  );
}
