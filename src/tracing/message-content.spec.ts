import { inputMessages, outputMessages } from './message-content';

const parsed = (text: string | null) => (text === null ? null : JSON.parse(text));

describe('message content', () => {
  it('reads the messages of each dialect: chat, Messages (system apart) and Responses (instructions, input)', () => {
    expect(parsed(inputMessages({ messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: [{ type: 'text', text: 'Hi' }, { type: 'image_url', image_url: { url: 'data:...' } }] }] }))).toEqual([
      { role: 'system', parts: [{ type: 'text', content: 'Be brief.' }] },
      { role: 'user', parts: [{ type: 'text', content: 'Hi' }, { type: 'image_url' }] },
    ]);
    expect(parsed(inputMessages({ system: [{ type: 'text', text: 'Be brief.' }], messages: [{ role: 'user', content: 'Hi' }] }))).toEqual([
      { role: 'system', parts: [{ type: 'text', content: 'Be brief.' }] },
      { role: 'user', parts: [{ type: 'text', content: 'Hi' }] },
    ]);
    expect(parsed(inputMessages({ instructions: 'Be brief.', input: 'Hi' }))).toEqual([
      { role: 'system', parts: [{ type: 'text', content: 'Be brief.' }] },
      { role: 'user', parts: [{ type: 'text', content: 'Hi' }] },
    ]);
    expect(inputMessages({ model: 'm' })).toBeNull();
    expect(inputMessages('not a body')).toBeNull();
  });

  it('reads the answers: chat choices, a Message, a Response', () => {
    expect(parsed(outputMessages({ choices: [{ message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }] }))).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: 'Hello' }], finish_reason: 'stop' },
    ]);
    expect(parsed(outputMessages({ role: 'assistant', content: [{ type: 'text', text: 'Hello' }, { type: 'tool_use', id: 't', input: {} }], stop_reason: 'tool_use' }))).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: 'Hello' }, { type: 'tool_use' }], finish_reason: 'tool_use' },
    ]);
    expect(parsed(outputMessages({ output: [{ type: 'reasoning', summary: [] }, { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hello' }] }] }))).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: 'Hello' }] },
    ]);
  });

  it('bounds the text in all and the number of messages kept (the latest)', () => {
    const many = Array.from({ length: 100 }, (_, i) => ({ role: 'user', content: `m${i} ${'y'.repeat(1000)}` }));
    const messages = parsed(inputMessages({ messages: many })) as { parts: { content: string }[] }[];
    expect(messages).toHaveLength(64);
    expect(messages[0].parts[0].content.startsWith('m36 ')).toBe(true);
    expect(messages.reduce((n, m) => n + m.parts[0].content.length, 0)).toBe(16 * 1024);
  });
});
