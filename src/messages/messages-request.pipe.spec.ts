import 'reflect-metadata';
import { validateGatewayConfig } from '../config/gateway-config.loader';
import { PROVIDER_TYPES } from '../providers/provider-types';
import { ErrorCode, GatewayError } from '../errors';
import { CatalogService } from '../models/catalog.service';
import { MessagesRequestPipe } from './messages-request.pipe';

const PRICED = {
  kind: 'chat', input_price_per_million: 5, output_price_per_million: 25, max_output_tokens: 1000,
  price_variants: [
    { when: { service_tier: 'priority' }, multiplier: 2 },
    { when: { speed: 'fast' }, multiplier: 6 },
    { when: { inference_geo: 'us' }, multiplier: 1.1 },
  ],
};
const HELLO = { max_tokens: 64, messages: [{ role: 'user', content: 'Hello' }] };

/** Models served by pass-through (`passed`), by translation (`translated`), by both (`mixed`), and one with flat prices (`flat`). */
function pipe(): MessagesRequestPipe {
  const config = validateGatewayConfig({
    providers: { local: { type: 'local' }, claude: { type: 'anthropic', base_url: 'http://127.0.0.1:9' } },
    catalog: [
      { id: 'passed', provider: 'claude', upstream_model: 'claude-opus-4-8', ...PRICED },
      { id: 'translated', provider: 'local', upstream_model: 'dev-echo', ...PRICED },
      { id: 'mixed', deployments: [{ provider: 'claude', upstream_model: 'claude-opus-4-8' }, { provider: 'local', upstream_model: 'dev-echo' }], ...PRICED },
      { id: 'flat', provider: 'claude', upstream_model: 'claude-opus-4-8', ...PRICED, price_variants: undefined },
    ],
  }, PROVIDER_TYPES);
  return new MessagesRequestPipe(new CatalogService(config), config);
}

function refusal(body: unknown): GatewayError {
  try {
    pipe().transform(body);
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

const OPTIONS = { service_tier: 'priority', speed: 'fast', inference_geo: 'us' };

describe(MessagesRequestPipe.name, () => {
  describe('tier, speed and region (DESIGN.md section 12.2)', () => {
    it('passes a priced option through as sent, every one in priceOptions', () => {
      const body = { model: 'passed', ...HELLO, ...OPTIONS };
      const request = pipe().transform(body);
      expect(request.passThroughBody).toBe(body);
      expect(request.chat.priceOptions).toEqual(OPTIONS);
      expect(request.ignored).toEqual([]);
    });

    it('on a translated model, carries a priced tier to the chat body; speed and region are named as ignored and not billed', () => {
      const request = pipe().transform({ model: 'translated', ...HELLO, ...OPTIONS });
      expect(request.chat.body).toMatchObject({ service_tier: 'priority' });
      expect(request.chat.body).not.toHaveProperty('speed');
      expect(request.chat.body).not.toHaveProperty('inference_geo');
      expect(request.chat.priceOptions).toEqual({ service_tier: 'priority' });
      expect(request.ignored.map((p) => p.name)).toEqual(['speed', 'inference_geo']);
      expect(request.passThroughBody).toBeUndefined();
    });

    it('on a model with both kinds of deployment, bills every option the pass-through may apply', () => {
      const request = pipe().transform({ model: 'mixed', ...HELLO, ...OPTIONS });
      expect(request.chat.priceOptions).toEqual(OPTIONS);
      expect(request.passThroughBody).toMatchObject(OPTIONS);
      expect(request.chat.body).not.toHaveProperty('speed');
    });

    it("treats Anthropic's standard values as the flat prices: standard_only and auto, standard speed, global region", () => {
      for (const model of ['passed', 'flat']) {
        const request = pipe().transform({ model, ...HELLO, service_tier: 'standard_only', speed: 'standard', inference_geo: 'global' });
        expect(request.chat.priceOptions).toBeUndefined();
      }
      const translated = pipe().transform({ model: 'translated', ...HELLO, service_tier: 'auto' });
      expect(translated.chat.body).not.toHaveProperty('service_tier');
      expect(translated.ignored.map((p) => p.name)).toEqual(['service_tier']);
    });

    it.each(Object.entries(OPTIONS))('refuses %s %j on a model that does not price it, passed through or not', (name, value) => {
      expect(refusal({ model: 'flat', ...HELLO, [name]: value })).toMatchObject({ code: ErrorCode.UnsupportedParameter, param: name });
      expect(refusal({ model: 'translated', ...HELLO, [name]: `${value}-unpriced` })).toMatchObject({ code: ErrorCode.UnsupportedParameter, param: name });
    });
  });
});
