import { countTokens } from 'gpt-tokenizer';
import { ChatChunk, ChatCompletion, ChatDelta, ChatRequestMessage, ChatTool } from '../providers/chat-contract';
import { countPromptTokens } from '../providers/token-count';
import { completionText, countedUsage, deltaText, promptTokenBound } from './chat-usage';

const CALLS = [
  { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris","unit":"celsius"}' } },
  { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{"zone":"Europe/Paris"}' } },
];

/** The chunks a server streams for `CALLS`: per call, its id and name with empty arguments, then the arguments in pieces. */
function streamedCalls(): ChatChunk[] {
  const chunk = (delta: ChatDelta): ChatChunk => ({ object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: null }] });
  const chunks = [chunk({ role: 'assistant', content: null })];
  CALLS.forEach((call, index) => {
    chunks.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] }));
    for (let i = 0; i < call.function.arguments.length; i += 7) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: call.function.arguments.slice(i, i + 7) } }] }));
    }
  });
  chunks.push({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] });
  return chunks;
}

describe(completionText.name, () => {
  it('takes the content, the refusal, and the name and arguments of every tool call (and the legacy function_call)', () => {
    const body = {
      choices: [
        { index: 0, message: { role: 'assistant', content: 'Let me check. ', refusal: null, tool_calls: CALLS } },
        { index: 1, message: { role: 'assistant', content: null, refusal: 'I cannot help with that.' } },
        { index: 2, message: { role: 'assistant', content: null, function_call: { name: 'lookup', arguments: '{"q":1}' } } },
      ],
    };
    expect(completionText(body)).toBe(
      'Let me check. ' + 'get_weather{"city":"Paris","unit":"celsius"}' + 'get_time{"zone":"Europe/Paris"}' + 'I cannot help with that.' + 'lookup{"q":1}',
    );
  });

  it('ignores what is not text: missing choices, null messages, calls without a function, non-string names', () => {
    // Malformed upstream bodies, outside the contract's types: the readers still check what they read.
    expect(completionText({} as ChatCompletion)).toBe('');
    expect(completionText({ choices: [null, { message: null }, { message: { tool_calls: [null, {}, { function: { name: 7, arguments: {} } }] } }] } as unknown as ChatCompletion)).toBe('');
  });
});

describe(deltaText.name, () => {
  it("adds a stream's tool-call deltas up to the JSON answer's text", () => {
    const streamed = streamedCalls().map(deltaText).join('');
    expect(streamed).toBe(completionText({ choices: [{ message: { role: 'assistant', content: null, tool_calls: CALLS } }] }));
    expect(streamed).toBe('get_weather{"city":"Paris","unit":"celsius"}get_time{"zone":"Europe/Paris"}');
  });

  it('takes content and refusal deltas as before', () => {
    expect(deltaText({ choices: [{ delta: { content: 'Hel' } }, { delta: { refusal: 'No.' } }] })).toBe('HelNo.');
    expect(deltaText({ choices: [] })).toBe('');
  });
});

describe(countedUsage.name, () => {
  it('counts the prompt with its tool definitions and the produced text with its tool calls', async () => {
    const messages: ChatRequestMessage[] = [{ role: 'user', content: 'Weather in Paris?' }];
    const tools: ChatTool[] = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    const produced = completionText({ choices: [{ message: { content: null, tool_calls: CALLS } }] });
    const counted = await countedUsage({ model: 'm', messages, tools }, produced);
    expect(counted).toEqual({ prompt_tokens: (await countPromptTokens(messages)) + countTokens(JSON.stringify(tools)), completion_tokens: countTokens(produced) });
    expect(counted.completion_tokens).toBeGreaterThan(10);
    // The hold's prompt bound covers the count.
    expect(counted.prompt_tokens).toBeLessThanOrEqual(promptTokenBound({ messages, tools }, undefined));
  });
});
