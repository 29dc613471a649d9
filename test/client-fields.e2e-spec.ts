import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { PricedModel, readSseData, sdk, useFakeGateway, waitForUsageRows } from './support/chat-support';
import { FakeUpstream } from './support/fake-upstream';
import { postMessages } from './support/messages-support';
import { expectValidStream, parseNamedEvents, postResponses } from './support/responses-support';
import { TEST_ADMIN_TOKEN, TestApp } from './support/test-app';

const MODEL: PricedModel = { id: 'client-fields', input: 3, output: 15, maxOutput: 64000 };
const HEADER = 'x-gateway-ignored-params';
const HELLO_MESSAGES = { model: MODEL.id, max_tokens: 64, messages: [{ role: 'user', content: 'Hello' }] };
const HELLO_RESPONSES = { model: MODEL.id, input: 'Hello' };

/** A body a real client sent (captured from the CLI against the gateway; test/real-clients.e2e-spec.ts runs the CLIs themselves). */
function capturedBody(file: string): Record<string, any> {
  const body = JSON.parse(readFileSync(join(__dirname, 'fixtures', 'clients', file), 'utf8'));
  return { ...body, model: MODEL.id };
}

/** Fields that only tune the model or ask for what a chat upstream cannot give: 200, named, not forwarded (DESIGN.md section 11). */
const MESSAGES_IGNORED: [Record<string, unknown>, string][] = [
  [{ output_config: { effort: 'high' } }, 'output_config'],
  [{ thinking: { type: 'adaptive' } }, 'thinking'],
  [{ thinking: { type: 'enabled', budget_tokens: 2048 } }, 'thinking'],
  [{ context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] } }, 'context_management'],
  [{ service_tier: 'auto' }, 'service_tier'],
  [{ cache_control: { type: 'ephemeral' } }, 'cache_control'],
  [{ top_k: 5 }, 'top_k'],
  [{ frobnicate: true }, 'frobnicate'],
  [{ tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }] }, 'tools:web_search_20250305'],
];

const RESPONSES_IGNORED: [Record<string, unknown>, string][] = [
  [{ include: ['reasoning.encrypted_content'] }, 'include:reasoning.encrypted_content'],
  [{ include: ['file_search_call.results', 'message.output_text.logprobs'] }, 'include:file_search_call.results,include:message.output_text.logprobs'],
  [{ client_metadata: { turn: '1' } }, 'client_metadata'],
  [{ prompt_cache_key: 'k' }, 'prompt_cache_key'],
  [{ safety_identifier: 'u1' }, 'safety_identifier'],
  [{ store: true }, 'store'],
  [{ text: { verbosity: 'low' } }, 'text.verbosity'],
  [{ reasoning: { summary: 'auto' } }, 'reasoning.summary'],
  [{ truncation: 'auto' }, 'truncation'],
  [{ context_management: [{ type: 'compaction' }] }, 'context_management'],
  // A standard tier: another one the model does not price is refused (test/price-options.e2e-spec.ts).
  [{ service_tier: 'default' }, 'service_tier'],
  [{ frobnicate: 1 }, 'frobnicate'],
  [{ tools: [{ type: 'web_search', external_web_access: false }] }, 'tools:web_search'],
  [{ tools: [{ type: 'function', name: 'f' }, { type: 'file_search', vector_store_ids: ['vs_1'] }] }, 'tools:file_search'],
];

describe('What real clients send: served, ignored (x-gateway-ignored-params) or refused (issue 32)', () => {
  let fake: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;
  const suite = useFakeGateway([MODEL], { reply: { content: 'Hi there', promptTokens: 12, completionTokens: 2 } });
  beforeAll(() => ({ fake, gw, admin, db } = suite));

  async function ignoredCount(route: string, param: string): Promise<number> {
    const res = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } });
    const line = (await res.text()).split('\n').find((l) => l.startsWith(`gateway_ignored_params_total{route="${route}",param="${param}"}`));
    return line ? Number(line.split(' ').pop()) : 0;
  }

  it.each(MESSAGES_IGNORED)('Messages: %j is answered, named %s and not forwarded', async (fields, named) => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const res = await postMessages(gw, key, { ...HELLO_MESSAGES, ...fields });
    expect(res.status).toBe(200);
    expect(res.headers.get(HEADER)).toBe(named);
    expect(((await res.json()) as any).content).toEqual([{ type: 'text', text: 'Hi there' }]);
    const sent = fake.requests[0].body;
    for (const name of Object.keys(fields)) if (name !== 'tools') expect(sent).not.toHaveProperty(name);
    expect(sent).not.toHaveProperty('tools');
  });

  it.each(RESPONSES_IGNORED)('Responses: %j is answered, named %s and not forwarded', async (fields, named) => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const res = await postResponses(gw, key, { ...HELLO_RESPONSES, ...fields });
    expect(res.status).toBe(200);
    expect(res.headers.get(HEADER)).toBe(named);
    expect(((await res.json()) as any).output[0].content[0].text).toBe('Hi there');
    const sent = fake.requests[0].body;
    for (const name of ['include', 'client_metadata', 'prompt_cache_key', 'safety_identifier', 'store', 'text', 'verbosity', 'truncation', 'context_management', 'service_tier', 'frobnicate']) {
      expect(sent).not.toHaveProperty(name);
    }
    expect((sent.tools ?? []).map((t: any) => t.type)).toEqual((sent.tools ?? []).map(() => 'function'));
  });

  it('no header when nothing is ignored, served defaults included (store: false, background: false, truncation: disabled, include: [])', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    for (const stream of [false, true]) {
      const messages = await postMessages(gw, key, { ...HELLO_MESSAGES, stream, temperature: 0.5, metadata: { user_id: 'u' } });
      expect(messages.status).toBe(200);
      expect(messages.headers.has(HEADER)).toBe(false);
      await messages.text();
      const responses = await postResponses(gw, key, { ...HELLO_RESPONSES, stream, store: false, background: false, truncation: 'disabled', include: [], reasoning: { effort: 'low' } });
      expect(responses.status).toBe(200);
      expect(responses.headers.has(HEADER)).toBe(false);
      await responses.text();
    }
    // reasoning.effort is served: chat's reasoning_effort.
    expect(fake.requests.filter((r) => r.body.reasoning_effort === 'low')).toHaveLength(2);
  });

  it('names in request order, streamed as well; the metric counts each by route and param, unknown fields as "other"', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const before = {
      thinking: await ignoredCount('/v1/messages', 'thinking'),
      other: await ignoredCount('/v1/messages', 'other'),
      web: await ignoredCount('/v1/messages', 'tools:web_search'),
    };
    const res = await postMessages(gw, key, {
      zeta: 1, thinking: { type: 'adaptive' }, ...HELLO_MESSAGES, tools: [{ type: 'web_search_20260209', name: 'web_search' }, { name: 'f', input_schema: { type: 'object' } }], stream: true, alpha: 2,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get(HEADER)).toBe('zeta,thinking,tools:web_search_20260209,alpha');
    expect(await res.text()).toContain('message_stop');
    expect(fake.requests[0].body.tools.map((t: any) => t.function.name)).toEqual(['f']);
    expect(await ignoredCount('/v1/messages', 'thinking')).toBe(before.thinking + 1);
    expect(await ignoredCount('/v1/messages', 'other')).toBe(before.other + 2);
    expect(await ignoredCount('/v1/messages', 'tools:web_search')).toBe(before.web + 1);
  });

  it('a name a header cannot carry is percent-encoded, and a body of many unknown fields gets a header of bounded size', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const odd = await postResponses(gw, key, { ...HELLO_RESPONSES, 'naïve key,\n': 1 });
    expect(odd.status).toBe(200);
    expect(odd.headers.get(HEADER)).toBe(encodeURIComponent('naïve key,\n'));
    const many: Record<string, number> = {};
    for (let i = 0; i < 5000; i++) many[`f${i}`] = i;
    const res = await postResponses(gw, key, { ...HELLO_RESPONSES, ...many });
    expect(res.status).toBe(200);
    const names = res.headers.get(HEADER)!.split(',');
    expect(names).toHaveLength(33);
    expect(names.slice(0, 2)).toEqual(['f0', 'f1']);
    expect(names[32]).toBe('+4968 more');
  });

  it('refused still: 400 unsupported_parameter with param for what needs state or a platform the gateway lacks', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const refused: [string, Record<string, unknown>, string][] = [
      ['/v1/responses', { ...HELLO_RESPONSES, previous_response_id: 'resp_1' }, 'previous_response_id'],
      ['/v1/responses', { ...HELLO_RESPONSES, conversation: 'conv_1' }, 'conversation'],
      ['/v1/responses', { ...HELLO_RESPONSES, background: true }, 'background'],
      ['/v1/responses', { ...HELLO_RESPONSES, prompt: { id: 'pmpt_1' } }, 'prompt'],
      ['/v1/responses', { ...HELLO_RESPONSES, tools: [{ type: 'web_search' }], tool_choice: { type: 'web_search' } }, 'tool_choice'],
      ['/v1/messages', { ...HELLO_MESSAGES, container: 'c_1' }, 'container'],
      ['/v1/messages', { ...HELLO_MESSAGES, mcp_servers: [{ type: 'url', url: 'https://example.com', name: 'x' }] }, 'mcp_servers'],
      ['/v1/messages', { ...HELLO_MESSAGES, tools: [{ type: 'text_editor_20250728', name: 'str_replace_based_edit_tool' }] }, 'tools[0].type'],
      ['/v1/messages', { ...HELLO_MESSAGES, tools: [{ type: 'web_search_20250305', name: 'web_search' }], tool_choice: { type: 'any' } }, 'tool_choice'],
    ];
    for (const [route, body, param] of refused) {
      const res = route === '/v1/messages' ? await postMessages(gw, key, body) : await postResponses(gw, key, body);
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error).toMatchObject({ code: 'unsupported_parameter', param });
    }
    expect(fake.requests).toHaveLength(0);
    await waitForUsageRows(db, accountId, refused.length);
  });

  it("Claude Code's request (captured from 2.1.332) is served: system-role messages in place, its tuning named, its tools offered", async () => {
    const { key } = await admin.createAccount({ creditsUsd: '5' });
    const body = capturedBody('claude-code-2.1.332.messages.json');
    const res = await postMessages(gw, key, body);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get(HEADER)).toBe('thinking,context_management,output_config');
    const text = await res.text();
    expect(text).toContain('event: message_stop');
    const sent = fake.requests[0].body;
    // The top-level system first, then the user turn, then the system-role message where Claude Code put it.
    expect(sent.messages.map((m: any) => m.role)).toEqual(['system', 'user', 'system']);
    expect(sent.messages[2].content).toContain('# Environment');
    expect(sent.tools.map((t: any) => t.function.name)).toEqual(body.tools.map((t: any) => t.name));
    for (const name of ['thinking', 'context_management', 'output_config']) expect(sent).not.toHaveProperty(name);
  });

  it("Codex's request (captured from 0.171.0) is served: include and client_metadata named, web search withdrawn, the namespace flattened", async () => {
    const { key } = await admin.createAccount({ creditsUsd: '5' });
    const body = capturedBody('codex-0.171.0.responses.json');
    const res = await postResponses(gw, key, body);
    expect(res.status).toBe(200);
    expect(res.headers.get(HEADER)).toBe('tools:web_search,reasoning.summary,include:reasoning.encrypted_content,prompt_cache_key,client_metadata');
    expectValidStream(parseNamedEvents(await res.text()));
    const sent = fake.requests[0].body;
    const group = body.tools.find((t: any) => t.type === 'namespace');
    const expected = body.tools.flatMap((t: any) => (t.type === 'function' ? [t.name] : t.type === 'namespace' ? t.tools.map((s: any) => `${group.name}__${s.name}`) : []));
    expect(sent.tools.map((t: any) => t.function.name)).toEqual(expected);
    expect(sent.tools.every((t: any) => t.type === 'function')).toBe(true);
    expect(sent.messages.map((m: any) => m.role)).toEqual(['system', 'system', 'user', 'user']);
    expect(sent).toMatchObject({ tool_choice: 'auto', parallel_tool_calls: true });
  });

  describe('client tools in their own shapes', () => {
    const GROUP = { type: 'namespace', name: 'crm', description: 'CRM tools', tools: [{ type: 'function', name: 'find', parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } }] };
    const PATCH = { type: 'custom', name: 'apply_patch', description: 'Applies a patch', format: { type: 'text' } };

    it.each([false, true])('a grouped tool is offered as group__name and its call answered as a function_call with its namespace (stream: %s)', async (stream) => {
      const { key } = await admin.createAccount({ creditsUsd: '1' });
      fake.reply = { content: '', promptTokens: 20, completionTokens: 6, toolCalls: [{ id: 'call_1', name: 'crm__find', arguments: '{"q":"acme"}' }] };
      const client = sdk(gw, key);
      const body = { model: MODEL.id, input: 'Find acme', tools: [GROUP] } as any;
      let output: any[];
      if (stream) {
        const events: any[] = [];
        for await (const event of (await client.responses.create({ ...body, stream: true })) as unknown as AsyncIterable<any>) events.push(event);
        output = events.find((e) => e.type === 'response.completed').response.output;
        expect(events.find((e) => e.type === 'response.function_call_arguments.done')).toMatchObject({ name: 'find', arguments: '{"q":"acme"}' });
      } else {
        output = (await client.responses.create(body)).output;
      }
      expect(output).toEqual([expect.objectContaining({ type: 'function_call', call_id: 'call_1', name: 'find', namespace: 'crm', arguments: '{"q":"acme"}', status: 'completed' })]);
      expect(fake.requests[0].body.tools).toEqual([{ type: 'function', function: { name: 'crm__find', parameters: GROUP.tools[0].parameters } }]);

      fake.reply = { content: 'Acme is a customer', promptTokens: 30, completionTokens: 4 };
      await client.responses.create({
        model: MODEL.id, tools: [GROUP],
        input: [{ role: 'user', content: 'Find acme' }, { type: 'function_call', call_id: 'call_1', name: 'find', namespace: 'crm', arguments: '{"q":"acme"}' }, { type: 'function_call_output', call_id: 'call_1', output: 'acme: customer' }],
      } as any);
      expect(fake.requests[1].body.messages.slice(1)).toEqual([
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'crm__find', arguments: '{"q":"acme"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'acme: customer' },
      ]);
    });

    it.each([false, true])('a custom tool is offered as a function of one string input and its call answered as custom_tool_call (stream: %s)', async (stream) => {
      const { key } = await admin.createAccount({ creditsUsd: '1' });
      const patch = '*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch';
      fake.reply = { content: '', promptTokens: 20, completionTokens: 9, toolCalls: [{ id: 'call_p', name: 'apply_patch', arguments: JSON.stringify({ input: patch }) }] };
      const res = await postResponses(gw, key, { model: MODEL.id, input: 'Add a.txt', tools: [PATCH], tool_choice: { type: 'custom', name: 'apply_patch' }, stream });
      expect(res.status).toBe(200);
      let output: any[];
      if (stream) {
        const events = parseNamedEvents(await res.text());
        expectValidStream(events);
        expect(events.map((e) => e.event)).not.toContain('response.function_call_arguments.delta');
        expect(events.find((e) => e.event === 'response.custom_tool_call_input.done')!.data).toMatchObject({ input: patch });
        output = events.find((e) => e.event === 'response.completed')!.data.response.output;
      } else {
        output = ((await res.json()) as any).output;
      }
      expect(output).toEqual([expect.objectContaining({ type: 'custom_tool_call', call_id: 'call_p', name: 'apply_patch', input: patch, status: 'completed' })]);
      const sent = fake.requests[0].body;
      expect(sent.tools[0].function).toMatchObject({ name: 'apply_patch', parameters: { type: 'object', required: ['input'] } });
      expect(sent.tool_choice).toEqual({ type: 'function', function: { name: 'apply_patch' } });

      fake.reply = { content: 'Done', promptTokens: 30, completionTokens: 1 };
      const next = await postResponses(gw, key, {
        model: MODEL.id, tools: [PATCH],
        input: [{ role: 'user', content: 'Add a.txt' }, { type: 'custom_tool_call', call_id: 'call_p', name: 'apply_patch', input: patch }, { type: 'custom_tool_call_output', call_id: 'call_p', output: 'ok' }],
      });
      expect(next.status).toBe(200);
      expect(fake.requests[1].body.messages.slice(1)).toEqual([
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_p', type: 'function', function: { name: 'apply_patch', arguments: JSON.stringify({ input: patch }) } }] },
        { role: 'tool', tool_call_id: 'call_p', content: 'ok' },
      ]);
    });

    it('the local shell is offered as a function of its exec action and its call answered as local_shell_call', async () => {
      const { key } = await admin.createAccount({ creditsUsd: '1' });
      fake.reply = { content: '', promptTokens: 20, completionTokens: 9, toolCalls: [{ id: 'call_s', name: 'local_shell', arguments: '{"command":["ls","-la"],"workdir":"/tmp"}' }] };
      const res = await postResponses(gw, key, { model: MODEL.id, input: 'List files', tools: [{ type: 'local_shell' }] });
      expect(res.status).toBe(200);
      expect(((await res.json()) as any).output).toEqual([
        expect.objectContaining({ type: 'local_shell_call', call_id: 'call_s', status: 'completed', action: { type: 'exec', command: ['ls', '-la'], env: {}, working_directory: '/tmp' } }),
      ]);
      expect(fake.requests[0].body.tools[0].function).toMatchObject({ name: 'local_shell', parameters: { required: ['command'] } });

      fake.reply = { content: 'Two files', promptTokens: 30, completionTokens: 2 };
      const next = await postResponses(gw, key, {
        model: MODEL.id, tools: [{ type: 'local_shell' }],
        input: [
          { role: 'user', content: 'List files' },
          { type: 'local_shell_call', id: 'lsh_1', call_id: 'call_s', status: 'completed', action: { type: 'exec', command: ['ls', '-la'], env: {}, working_directory: '/tmp' } },
          { type: 'local_shell_call_output', id: 'call_s', output: 'a b' },
        ],
      });
      expect(next.status).toBe(200);
      expect(fake.requests[1].body.messages.slice(1)).toEqual([
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_s', type: 'function', function: { name: 'local_shell', arguments: '{"command":["ls","-la"],"workdir":"/tmp"}' } }] },
        { role: 'tool', tool_call_id: 'call_s', content: 'a b' },
      ]);
    });

    it('Messages: a system-role message is a system message at that point; an Anthropic server tool is withdrawn, the custom tools offered', async () => {
      const { key } = await admin.createAccount({ creditsUsd: '1' });
      const res = await postMessages(gw, key, {
        ...HELLO_MESSAGES,
        system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
        messages: [
          { role: 'user', content: 'Hello' },
          { role: 'assistant', content: 'Hi' },
          { role: 'system', content: [{ type: 'text', text: 'Now answer in French.' }, { type: 'text', text: 'Politely.' }] },
          { role: 'user', content: 'Again' },
        ],
        tools: [{ name: 'Read', input_schema: { type: 'object', properties: { file_path: { type: 'string' } } }, defer_loading: true }, { type: 'web_fetch_20250910', name: 'web_fetch' }],
      });
      expect(res.status).toBe(200);
      expect(res.headers.get(HEADER)).toBe('tools:web_fetch_20250910');
      expect(fake.requests[0].body.messages).toEqual([
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hello' },
        { role: 'assistant', content: 'Hi' },
        { role: 'system', content: 'Now answer in French.\n\nPolitely.' },
        { role: 'user', content: 'Again' },
      ]);
      expect(fake.requests[0].body.tools.map((t: any) => t.function.name)).toEqual(['Read']);
      const bad = await postMessages(gw, key, { ...HELLO_MESSAGES, messages: [{ role: 'system', content: [{ type: 'image' }] }] });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as any).error).toMatchObject({ code: 'invalid_request_error', param: 'messages[0].content[0]' });
    });
  });

  it('the chat data of an ignored-params stream reaches the client whole (SSE data lines parse)', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const res = await postMessages(gw, key, { ...HELLO_MESSAGES, stream: true, output_config: { effort: 'low' } });
    expect(res.headers.get(HEADER)).toBe('output_config');
    const data = await readSseData(res);
    expect(data.map((d) => JSON.parse(d).type)).toContain('message_stop');
  });
});
