import type { CatalogEntry } from '../../config/gateway-config.schema';
import { UNDOCUMENTED_FIELDS } from '../../../test/support/fake-openai-responses';
import { responsesBodyProblem } from '../../../test/support/fake-openai-responses-refusals';
import type { ChatRequestBody } from '../chat-contract';
import { UpstreamFailure } from '../upstream-failure';
import { MIN_OUTPUT_TOKENS, responsesRequest } from './chat-to-responses';

const MODEL = { id: 'codex', kind: 'chat', max_output_tokens: 8192 } as CatalogEntry;
const chat = (fields: Record<string, unknown>): ChatRequestBody => ({ model: 'gpt-5-codex', messages: [{ role: 'user', content: 'Hi' }], ...fields }) as ChatRequestBody;
const sut = (fields: Record<string, unknown>) => responsesRequest(chat(fields), MODEL);
/** What OpenAI (as the fake OpenAI checks it, from OpenAI's own schema of CreateResponse) refuses of a translated body; null when it takes it. */
const refusedUpstream = (body: object) => responsesBodyProblem(JSON.parse(JSON.stringify(body)), new Set(UNDOCUMENTED_FIELDS));

function failureOf(fields: Record<string, unknown>): UpstreamFailure {
  try {
    sut(fields);
  } catch (err) {
    if (err instanceof UpstreamFailure) return err;
    throw err;
  }
  throw new Error('the request was translated');
}

const WEATHER = { type: 'function', function: { name: 'get_weather', description: 'Weather now.', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, strict: true } };
const EXEC = { type: 'custom', custom: { name: 'exec', description: 'Runs a command.', format: { type: 'grammar', grammar: { syntax: 'lark', definition: 'start: /.+/' } } } };

describe(responsesRequest.name, () => {
  it('sends the model, the input in order, and store false, whatever the client asked', () => {
    const request = sut({ store: true, messages: [{ role: 'user', content: 'Hi' }] });
    expect(request).toEqual({ model: 'gpt-5-codex', input: [{ role: 'user', content: 'Hi' }], store: false });
    expect(refusedUpstream(request)).toBeNull();
  });

  it('keeps system and developer messages in place, of their own role, text parts as input_text', () => {
    const request = sut({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'a' },
        { role: 'developer', content: [{ type: 'text', text: 'Rule one.' }, { type: 'text', text: 'Rule two.' }] },
      ],
    });
    expect(request.instructions).toBeUndefined();
    expect(request.input).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'a' },
      { role: 'developer', content: [{ type: 'input_text', text: 'Rule one.' }, { type: 'input_text', text: 'Rule two.' }] },
    ]);
    expect(refusedUpstream(request)).toBeNull();
  });

  it('maps user parts: text, images (URL or {url, detail}, detail auto by default), files', () => {
    const request = sut({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } },
            { type: 'image_url', image_url: 'data:image/png;base64,iVBORw0KGgo=' },
            { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' } },
            { type: 'file', file: { file_id: 'file-abc' } },
          ],
        },
      ],
    });
    expect(request.input).toEqual([
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'What is this?' },
          { type: 'input_image', image_url: 'https://example.com/cat.png', detail: 'low' },
          { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'auto' },
          { type: 'input_file', file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' },
          { type: 'input_file', file_id: 'file-abc' },
        ],
      },
    ]);
    expect(refusedUpstream(request)).toBeNull();
  });

  it('sends an earlier answer back as an assistant message of output_text (and refusal) parts, then its tool calls as items', () => {
    const request = sut({
      tools: [WEATHER, EXEC],
      messages: [
        { role: 'user', content: 'Weather in Paris, then list /tmp.' },
        {
          role: 'assistant',
          content: 'Looking.',
          tool_calls: [
            { id: 'call_w', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
            { id: 'call_x', type: 'custom', custom: { name: 'exec', input: 'ls /tmp' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_w', content: [{ type: 'text', text: '{"sky":' }, { type: 'text', text: '"clear"}' }] },
        { role: 'tool', tool_call_id: 'call_x', content: 'a.txt' },
        { role: 'assistant', content: [{ type: 'text', text: 'Clear.' }, { type: 'refusal', refusal: 'No more.' }] },
        { role: 'assistant', content: null, refusal: 'I cannot.' },
      ],
    });
    expect(request.input).toEqual([
      { role: 'user', content: 'Weather in Paris, then list /tmp.' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Looking.' }] },
      { type: 'function_call', call_id: 'call_w', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { type: 'custom_tool_call', call_id: 'call_x', name: 'exec', input: 'ls /tmp' },
      { type: 'function_call_output', call_id: 'call_w', output: '{"sky":"clear"}' },
      { type: 'custom_tool_call_output', call_id: 'call_x', output: 'a.txt' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Clear.' }, { type: 'refusal', refusal: 'No more.' }] },
      { type: 'message', role: 'assistant', content: [{ type: 'refusal', refusal: 'I cannot.' }] },
    ]);
    expect(refusedUpstream(request)).toBeNull();
  });

  it('sends no assistant message for an answer that was only tool calls, and no reasoning_content', () => {
    const request = sut({
      messages: [
        { role: 'user', content: 'Go.' },
        { role: 'assistant', content: '', reasoning_content: 'I should call f.', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'ok' },
      ],
    });
    expect(request.input).toEqual([
      { role: 'user', content: 'Go.' },
      { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
      { type: 'function_call_output', call_id: 'c1', output: 'ok' },
    ]);
  });

  it('ties legacy function results to the legacy calls they answer by a made call id; an untied one is user text', () => {
    const request = sut({
      functions: [{ name: 'lookup', parameters: { type: 'object', properties: {} } }],
      function_call: { name: 'lookup' },
      messages: [
        { role: 'user', content: 'Look it up.' },
        { role: 'assistant', content: null, function_call: { name: 'lookup', arguments: '{"q":"x"}' } },
        { role: 'function', name: 'lookup', content: 'found' },
        { role: 'function', name: 'other', content: 'stray' },
      ],
    });
    expect(request.input).toEqual([
      { role: 'user', content: 'Look it up.' },
      { type: 'function_call', call_id: 'call_function_1', name: 'lookup', arguments: '{"q":"x"}' },
      { type: 'function_call_output', call_id: 'call_function_1', output: 'found' },
      { role: 'user', content: 'stray' },
    ]);
    expect(request.tools).toEqual([{ type: 'function', name: 'lookup', parameters: { type: 'object', properties: {} }, strict: false }]);
    expect(request.tool_choice).toEqual({ type: 'function', name: 'lookup' });
    expect(refusedUpstream(request)).toBeNull();
  });

  it('flattens function and custom tools; strict is said, false where chat left it out', () => {
    const loose = { type: 'function', function: { name: 'f' } };
    const text = { type: 'custom', custom: { name: 'note', format: { type: 'text' } } };
    const request = sut({ tools: [WEATHER, loose, EXEC, text], parallel_tool_calls: false });
    expect(request.tools).toEqual([
      { type: 'function', name: 'get_weather', description: 'Weather now.', parameters: WEATHER.function.parameters, strict: true },
      { type: 'function', name: 'f', parameters: null, strict: false },
      { type: 'custom', name: 'exec', description: 'Runs a command.', format: { type: 'grammar', syntax: 'lark', definition: 'start: /.+/' } },
      { type: 'custom', name: 'note', format: { type: 'text' } },
    ]);
    expect(request.parallel_tool_calls).toBe(false);
    expect(refusedUpstream(request)).toBeNull();
  });

  it('maps tool_choice: the modes as they are, a named function or custom tool flattened, allowed_tools flattened', () => {
    const tools = [WEATHER, EXEC];
    const choiceOf = (tool_choice: unknown) => sut({ tools, tool_choice }).tool_choice;
    expect(['none', 'auto', 'required'].map(choiceOf)).toEqual(['none', 'auto', 'required']);
    expect(choiceOf({ type: 'function', function: { name: 'get_weather' } })).toEqual({ type: 'function', name: 'get_weather' });
    expect(choiceOf({ type: 'custom', custom: { name: 'exec' } })).toEqual({ type: 'custom', name: 'exec' });
    const allowed = { type: 'allowed_tools', allowed_tools: { mode: 'required', tools: [{ type: 'function', function: { name: 'get_weather' } }, { type: 'custom', custom: { name: 'exec' } }] } };
    expect(choiceOf(allowed)).toEqual({ type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'get_weather' }, { type: 'custom', name: 'exec' }] });
    expect(refusedUpstream(sut({ tools, tool_choice: allowed }))).toBeNull();
  });

  it('sends no tool_choice or parallel_tool_calls without tools (chat refuses them there too)', () => {
    const request = sut({ tool_choice: 'required', parallel_tool_calls: true });
    expect(request).not.toHaveProperty('tool_choice');
    expect(request).not.toHaveProperty('parallel_tool_calls');
  });

  it('sends the output limit as max_output_tokens: the gateway\'s max_completion_tokens first, else max_tokens; none when none was set', () => {
    expect(sut({ max_completion_tokens: 100, max_tokens: 500 }).max_output_tokens).toBe(100);
    expect(sut({ max_tokens: 50 }).max_output_tokens).toBe(50);
    expect(sut({})).not.toHaveProperty('max_output_tokens');
    const request = sut({ max_tokens: 50 });
    expect(request).not.toHaveProperty('max_tokens');
    expect(refusedUpstream(request)).toBeNull();
  });

  it('maps sampling, reasoning_effort, response_format and verbosity', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false };
    const request = sut({ temperature: 0.2, top_p: 0.9, reasoning_effort: 'high', verbosity: 'low', response_format: { type: 'json_schema', json_schema: { name: 'answer', description: 'One field.', schema, strict: true } } });
    expect(request).toMatchObject({ temperature: 0.2, top_p: 0.9, reasoning: { effort: 'high' }, text: { format: { type: 'json_schema', name: 'answer', description: 'One field.', schema, strict: true }, verbosity: 'low' } });
    expect(refusedUpstream(request)).toBeNull();
    expect(sut({ response_format: { type: 'json_object' } }).text).toEqual({ format: { type: 'json_object' } });
    expect(sut({ response_format: { type: 'text' } }).text).toEqual({ format: { type: 'text' } });
    expect(sut({})).not.toHaveProperty('text');
    expect(sut({})).not.toHaveProperty('reasoning');
  });

  it('passes the fields both APIs share by name: user (not moved to safety_identifier), safety_identifier, prompt_cache_key, service_tier, metadata; stream', () => {
    const longUser = 'u'.repeat(80);
    const request = sut({ user: longUser, safety_identifier: 'hash-1', prompt_cache_key: 'k', service_tier: 'flex', metadata: { team: 'a' }, stream: true, stream_options: { include_usage: true } });
    expect(request).toMatchObject({ user: longUser, safety_identifier: 'hash-1', prompt_cache_key: 'k', service_tier: 'flex', metadata: { team: 'a' }, stream: true });
    expect(request).not.toHaveProperty('stream_options');
    expect(refusedUpstream(request)).toBeNull();
  });

  it('does not send what Responses has no field for: stop, seed, penalties, logit_bias, logprobs, prediction, web_search_options', () => {
    const request = sut({ stop: ['END'], seed: 7, frequency_penalty: 0.5, presence_penalty: 0.5, logit_bias: { '50256': -100 }, logprobs: true, top_logprobs: 2, prediction: { type: 'content', content: 'x' }, web_search_options: {} });
    expect(Object.keys(request).sort()).toEqual(['input', 'model', 'store']);
    expect(refusedUpstream(request)).toBeNull();
  });

  it('refuses before any upstream call what Responses cannot answer: n > 1, a limit below 16, audio in or out, a role chat does not have', () => {
    for (const [fields, param] of [
      [{ n: 2 }, 'n: 2'],
      [{ max_tokens: MIN_OUTPUT_TOKENS - 1 }, 'max_tokens: 15'],
      [{ max_completion_tokens: 5, max_tokens: 100 }, 'max_completion_tokens: 5'],
      [{ modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'mp3' } }, 'modalities'],
      [{ messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }] }] }, 'input_audio'],
      [{ messages: [{ role: 'user', content: 'a' }, { role: 'critic', content: 'b' }] }, 'messages[1].role: "critic"'],
    ] as const) {
      const failure = failureOf(fields);
      expect([failure.kind, failure.status, failure.message.startsWith(param)]).toEqual(['rejected', 400, true]);
    }
    expect(sut({ n: 1, max_tokens: MIN_OUTPUT_TOKENS }).max_output_tokens).toBe(MIN_OUTPUT_TOKENS);
  });
});
