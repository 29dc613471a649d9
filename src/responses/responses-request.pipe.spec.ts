import 'reflect-metadata';
import { validateGatewayConfig } from '../config/gateway-config.loader';
import { PROVIDER_TYPES } from '../providers/provider-types';
import { GatewayError } from '../errors';
import { CatalogService } from '../models/catalog.service';
import { ResponsesRequest, ResponsesRequestPipe } from './responses-request.pipe';

/** Codex 0.171.0's way of offering its tools: an input item before the messages, tools grouped in namespaces. */
const ADDITIONAL_TOOLS = {
  type: 'additional_tools',
  id: 'at_1',
  role: 'developer',
  tools: [
    {
      type: 'namespace',
      name: 'functions',
      description: '',
      tools: [
        { type: 'custom', name: 'exec', description: 'Run JavaScript', format: { type: 'grammar', syntax: 'lark', definition: 'start: /.+/' } },
        { type: 'function', name: 'wait', strict: false, parameters: { type: 'object', properties: { cell_id: { type: 'string' } }, required: ['cell_id'] } },
      ],
    },
    { type: 'web_search' },
  ],
};
const USER = { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] };

function pipe(): ResponsesRequestPipe {
  const config = validateGatewayConfig({
    providers: { local: { type: 'local' } },
    catalog: [{ id: 'dev-echo', kind: 'chat', provider: 'local', upstream_model: 'dev-echo', input_price_per_million: 1, output_price_per_million: 2, max_output_tokens: 100, aliases: ['gpt-*-sol'] }],
  }, PROVIDER_TYPES);
  return new ResponsesRequestPipe(new CatalogService(config), config);
}

/** A pipe over a catalog whose `tiered` model prices OpenAI's fast tier (and Anthropic's fast mode, which is not Responses'). */
function tieredPipe(): ResponsesRequestPipe {
  const prices = { kind: 'chat', provider: 'local', upstream_model: 'dev-echo', input_price_per_million: 1, output_price_per_million: 2, max_output_tokens: 100 };
  const config = validateGatewayConfig({
    providers: { local: { type: 'local' } },
    catalog: [{ id: 'tiered', ...prices, price_variants: [{ when: { service_tier: ['priority', 'fast'] }, multiplier: 2 }, { when: { speed: 'fast' }, multiplier: 6 }] }],
  }, PROVIDER_TYPES);
  return new ResponsesRequestPipe(new CatalogService(config), config);
}

function refusal(body: unknown, sut = pipe()): { code: string; param: string | null | undefined; message: string } {
  try {
    sut.transform(body);
  } catch (err) {
    const e = err as GatewayError;
    return { code: e.code, param: e.param, message: e.message };
  }
  throw new Error('expected a refusal');
}

describe(ResponsesRequestPipe.name, () => {
  describe('tools offered in an additional_tools input item (DESIGN.md section 12.3)', () => {
    it('offers them as the tool list is offered: namespaces flattened, custom tools as one string input, built-in ones withdrawn', () => {
      const sut = pipe();
      const request = sut.transform({ model: 'gpt-6.2-sol', stream: true, tool_choice: 'auto', input: [ADDITIONAL_TOOLS, USER] });
      expect(request.chat.model.id).toBe('dev-echo');
      expect(request.chat.body.tools).toEqual([
        { type: 'function', function: expect.objectContaining({ name: 'functions__exec', parameters: expect.objectContaining({ required: ['input'] }) }) },
        { type: 'function', function: expect.objectContaining({ name: 'functions__wait', strict: false }) },
      ]);
      expect(request.chat.body.tool_choice).toBe('auto');
      expect([...(request as ResponsesRequest).toolShapes]).toEqual([
        ['functions__exec', { kind: 'custom', name: 'exec', namespace: 'functions' }],
        ['functions__wait', { kind: 'function', name: 'wait', namespace: 'functions' }],
      ]);
      // The item is an offer, not a message; the withdrawn built-in tool is named where the offer stands.
      expect(request.chat.body.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
      expect(request.ignored.map((p) => p.name)).toEqual(['tools:web_search']);
    });

    it('offers the tool list first, then each item, in input order', () => {
      const sut = pipe();
      const own = { type: 'function', name: 'lookup', parameters: { type: 'object', properties: {} } };
      const request = sut.transform({ model: 'dev-echo', tools: [own], input: [ADDITIONAL_TOOLS, USER] });
      expect((request.chat.body.tools as { function: { name: string } }[]).map((t) => t.function.name)).toEqual(['lookup', 'functions__exec', 'functions__wait']);
      expect(request.ignored.map((p) => p.name)).toEqual(['tools:web_search']);
    });

    it.each<[string, unknown[], string, string]>([
      ['tools that are not a list', [{ type: 'additional_tools', role: 'developer', tools: 'exec' }, USER], 'input[0].tools', 'invalid_request_error'],
      ['a tool without a name', [{ ...ADDITIONAL_TOOLS, tools: [{ type: 'function' }] }, USER], 'input[0].tools[0].name', 'invalid_request_error'],
      ['a namespace holding a built-in tool', [USER, { ...ADDITIONAL_TOOLS, tools: [{ type: 'namespace', name: 'g', tools: [{ type: 'web_search' }] }] }], 'input[1].tools[0].tools[0].type', 'invalid_request_error'],
      ['a name offered twice', [ADDITIONAL_TOOLS, { ...ADDITIONAL_TOOLS, tools: [{ type: 'function', name: 'functions__wait' }] }, USER], 'input[1].tools[0].name', 'invalid_request_error'],
    ])('refuses %s with 400, naming the field', (_case, input, param, code) => {
      expect(refusal({ model: 'dev-echo', input })).toMatchObject({ code, param });
    });
  });

  describe('service_tier, which changes the price (DESIGN.md section 12.2)', () => {
    it('carries a priced tier to the chat body and priceOptions, not named as ignored', () => {
      const request = tieredPipe().transform({ model: 'tiered', input: 'hi', service_tier: 'priority' });
      expect(request.chat.body.service_tier).toBe('priority');
      expect(request.chat.priceOptions).toEqual({ service_tier: 'priority' });
      expect(request.ignored).toEqual([]);
    });

    it('ignores a standard tier as before: named, not carried, no priceOptions', () => {
      const request = pipe().transform({ model: 'dev-echo', input: 'hi', service_tier: 'default' });
      expect(request.chat.body).not.toHaveProperty('service_tier');
      expect(request.chat.priceOptions).toBeUndefined();
      expect(request.ignored.map((p) => p.name)).toEqual(['service_tier']);
    });

    it('refuses a tier the model does not price, before translating anything', () => {
      expect(refusal({ model: 'dev-echo', input: 'hi', service_tier: 'flex' })).toMatchObject({ code: 'unsupported_parameter', param: 'service_tier' });
      expect(refusal({ model: 'tiered', input: 'hi', service_tier: 'flex' }, tieredPipe())).toMatchObject({ code: 'unsupported_parameter', param: 'service_tier' });
    });

    it("leaves Anthropic's speed, not a Responses field, ignored and never sent", () => {
      const request = tieredPipe().transform({ model: 'tiered', input: 'hi', speed: 'fast' });
      expect(request.chat.body).not.toHaveProperty('speed');
      expect(request.chat.priceOptions).toBeUndefined();
      expect(request.ignored.map((p) => p.name)).toEqual(['speed']);
    });
  });
});
