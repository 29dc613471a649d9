import fc from 'fast-check';
import { absent, arrayOf, extraEntries, field, hostileNumber, hostileStructure, hostileValue, int, messageText, objectOf, oneOfValues, optional, Piece, valid } from './fuzz-json';
import type { FuzzTargets } from './fuzz-routes';

/**
 * Bodies for `POST /v1/messages` (docs/messages.md), built like the Responses bodies: each field mostly valid,
 * sometimes hostile, sometimes one the gateway refuses with 400 `unsupported_parameter`, so that about half
 * the bodies reach the upstream, the Message translation, the event stream and billing.
 */

const VALID_WEIGHT = 60;
const NESTED_WEIGHT = 100;

const topField = (validValues: fc.Arbitrary<Piece | undefined>, hostile?: fc.Arbitrary<Piece>) => field(validValues, hostile, VALID_WEIGHT);
const nestedField = (validValues: fc.Arbitrary<Piece | undefined>, hostile?: fc.Arbitrary<Piece>) => field(validValues, hostile, NESTED_WEIGHT);
const named = (value: unknown, name: string): Piece => ({ text: JSON.stringify(value), hostile: [name] });

const toolName = fc.constantFrom('get_weather', 'lookup', 'f').map(valid);
const toolId = fc.constantFrom('toolu_1', 'call_abc').map(valid);

const textBlock = objectOf({ type: fc.constant(valid('text')), text: nestedField(messageText), cache_control: optional(fc.constant(valid({ type: 'ephemeral' }))) });
const imageBlock = objectOf({
  type: fc.constant(valid('image')),
  source: nestedField(
    oneOfValues({ type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' }, { type: 'url', url: 'https://example.com/cat.png' }),
    fc.oneof(hostileValue(), fc.constant(named({ type: 'file', file_id: 'file_1' }, 'image by file id (refused)')), fc.constant(named({ type: 'base64', media_type: 'text/html', data: 'x' }, 'not an image type'))),
  ),
});
const toolResultBlock = objectOf({
  type: fc.constant(valid('tool_result')),
  tool_use_id: nestedField(toolId),
  content: nestedField(fc.oneof(messageText, fc.array(textBlock, { minLength: 1, maxLength: 2 }).map(arrayOf)), fc.oneof(hostileValue(), fc.constant(named([{ type: 'image', source: { type: 'url', url: 'https://x' } }], 'image tool result (refused)')))),
  is_error: optional(fc.boolean().map(valid)),
});
const toolUseBlock = objectOf({
  type: fc.constant(valid('tool_use')),
  id: nestedField(toolId),
  name: nestedField(toolName),
  input: nestedField(oneOfValues({}, { city: 'Paris' }), hostileValue()),
});
const thinkingBlock = fc.constant(valid({ type: 'thinking', thinking: 'hmm', signature: 'sig' }));
const badBlock = fc.oneof(
  fc.constantFrom(
    named({ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } }, 'document block (refused)'),
    named({ type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: {} }, 'server tool block (refused)'),
    named({ type: 'input_text', text: 'x' }, 'OpenAI part type'),
  ),
  hostileValue(),
);

const blocks = (allowed: fc.Arbitrary<Piece>) => fc.array(fc.oneof({ weight: 40, arbitrary: allowed }, { weight: 1, arbitrary: badBlock }), { minLength: 1, maxLength: 3 }).map(arrayOf);

const userMessage = objectOf({
  role: nestedField(fc.constant(valid('user')), fc.oneof(hostileValue(), fc.constant(named('system', 'role system')))),
  content: nestedField(fc.oneof({ weight: 3, arbitrary: messageText }, { weight: 2, arbitrary: blocks(fc.oneof({ weight: 3, arbitrary: textBlock }, { weight: 1, arbitrary: imageBlock }, { weight: 1, arbitrary: toolResultBlock })) }), hostileStructure()),
});
const assistantMessage = objectOf({
  role: fc.constant(valid('assistant')),
  content: nestedField(fc.oneof({ weight: 3, arbitrary: messageText }, { weight: 2, arbitrary: blocks(fc.oneof({ weight: 3, arbitrary: textBlock }, { weight: 1, arbitrary: toolUseBlock }, { weight: 1, arbitrary: thinkingBlock })) }), hostileStructure()),
});

const messages = fc.oneof(
  { weight: 12, arbitrary: fc.tuple(userMessage, fc.array(fc.tuple(assistantMessage, userMessage), { maxLength: 1 })).map(([first, rest]) => arrayOf([first, ...rest.flat()])) },
  { weight: 1, arbitrary: fc.oneof(fc.constant(named([], 'empty messages')), hostileValue()) },
);

const schema = oneOfValues({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, { type: 'object' });
const customTool = objectOf({
  name: nestedField(toolName, fc.oneof(hostileValue(), fc.constant(named('', 'empty tool name')))),
  description: optional(fc.string({ maxLength: 30 }).map(valid)),
  input_schema: nestedField(schema, hostileValue()),
  type: optional(fc.constant(valid('custom'))),
});
const serverTool = fc.constantFrom(
  named({ type: 'web_search_20250305', name: 'web_search' }, 'web search tool (refused)'),
  named({ type: 'code_execution_20250522', name: 'code_execution' }, 'code execution tool (refused)'),
  named({ type: 'bash_20250124', name: 'bash' }, 'bash tool (refused)'),
);
const tools = topField(
  fc.oneof({ weight: 3, arbitrary: absent }, { weight: 2, arbitrary: fc.array(customTool, { minLength: 1, maxLength: 2 }).map(arrayOf) }),
  fc.oneof(serverTool.map((t) => arrayOf([t])), hostileValue()),
);
const toolChoice = topField(
  fc.oneof(absent, oneOfValues({ type: 'auto' }, { type: 'none' }, { type: 'any' }, { type: 'auto', disable_parallel_tool_use: true }), toolName.map((n) => ({ text: `{"type":"tool","name":${n.text}}`, hostile: [] }))),
  fc.oneof(hostileValue(), fc.constantFrom(named('auto', 'tool_choice as a string'), named({ type: 'tool' }, 'tool choice without a name'), named({ type: 'required' }, 'OpenAI tool_choice'))),
);

const system = topField(
  fc.oneof(absent, messageText, fc.array(textBlock, { minLength: 1, maxLength: 2 }).map(arrayOf)),
  fc.oneof(hostileValue(), fc.constant(named([{ type: 'image', source: {} }], 'image system block'))),
);

const ACCEPTED: [string, unknown][] = [
  ['thinking', { type: 'enabled', budget_tokens: 1024 }],
  ['service_tier', 'auto'],
  ['context_management', { edits: [] }],
  ['cache_control', { type: 'ephemeral' }],
  ['top_k', 40],
  ['mcp_servers', []],
];
const REFUSED: [string, unknown][] = [
  ['mcp_servers', [{ type: 'url', url: 'https://example.com', name: 'x' }]],
  ['container', 'container_1'],
];
const platformFields: fc.Arbitrary<[string, Piece][]> = fc.oneof(
  { weight: 24, arbitrary: fc.constant<[string, Piece][]>([]) },
  { weight: 4, arbitrary: fc.constantFrom(...ACCEPTED).map(([k, v]): [string, Piece][] => [[k, valid(v)]]) },
  { weight: 2, arbitrary: fc.constantFrom(...REFUSED).map(([k, v]): [string, Piece][] => [[k, named(v, `${k} (refused)`)]]) },
);
const otherExtras = fc.oneof({ weight: 2, arbitrary: fc.constant<[string, Piece][]>([]) }, { weight: 1, arbitrary: extraEntries(['model', 'messages', 'stream', 'max_tokens']) });

export function messagesBody(targets: FuzzTargets): fc.Arbitrary<Piece> {
  return objectOf(
    {
      model: topField(oneOfValues(...targets.chatModels), fc.oneof(hostileValue(), fc.constant(named('no-such-model', 'unknown model')), fc.constant(named(targets.speechModel, 'speech model on messages')))),
      max_tokens: field(int(1, 200), fc.oneof(hostileNumber(), hostileValue(), fc.constant({ text: 'null', hostile: ['max_tokens null'] })), VALID_WEIGHT),
      messages: field(messages, hostileStructure(), VALID_WEIGHT),
      system,
      tools,
      tool_choice: toolChoice,
      stop_sequences: topField(optional(oneOfValues(['###'], ['\n\nHuman:'], [])), fc.oneof(hostileValue(), fc.constant(named([''], 'empty stop sequence')))),
      temperature: topField(optional(fc.double({ min: 0, max: 1, noNaN: true }).map(valid)), fc.oneof(hostileNumber(), hostileValue())),
      top_p: topField(optional(fc.double({ min: 0, max: 1, noNaN: true }).map(valid)), fc.oneof(hostileNumber(), hostileValue())),
      metadata: topField(optional(fc.oneof(oneOfValues({ user_id: 'u-1' }, { user_id: null }, {}))), fc.oneof(hostileValue(), fc.constant(named({ user_id: 7 }, 'user_id a number')))),
      stream: topField(fc.oneof({ weight: 2, arbitrary: absent }, { weight: 2, arbitrary: fc.constant(valid(true)) }, { weight: 1, arbitrary: fc.constant(valid(false)) })),
    },
    fc.tuple(platformFields, otherExtras).map(([a, b]) => [...a, ...b]),
  );
}
