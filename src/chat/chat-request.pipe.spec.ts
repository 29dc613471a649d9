import 'reflect-metadata';
import { validateGatewayConfig } from '../config/gateway-config.loader';
import { PROVIDER_TYPES } from '../providers/provider-types';
import { ErrorCode, GatewayError } from '../errors';
import { CatalogService } from '../models/catalog.service';
import { ChatRequestPipe } from './chat-request.pipe';

const PRICES = { input_price_per_million: 1, output_price_per_million: 2, max_output_tokens: 100 };
const MESSAGES = [{ role: 'user', content: 'hi' }];

function pipe(): ChatRequestPipe {
  const config = validateGatewayConfig({
    providers: { local: { type: 'local' } },
    catalog: [
      { id: 'tiered', kind: 'chat', provider: 'local', upstream_model: 'dev-echo', ...PRICES, price_variants: [{ when: { service_tier: ['priority', 'fast'] }, multiplier: 2 }] },
      { id: 'flat', kind: 'chat', provider: 'local', upstream_model: 'dev-echo', ...PRICES },
    ],
  }, PROVIDER_TYPES);
  return new ChatRequestPipe(new CatalogService(config));
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

describe(ChatRequestPipe.name, () => {
  describe('service_tier and the other options that change the price (DESIGN.md section 12.2)', () => {
    it('keeps a priced tier in the body as sent and in priceOptions', () => {
      const { chat, ignored } = pipe().transform({ model: 'tiered', messages: MESSAGES, service_tier: 'fast' });
      expect(chat.body.service_tier).toBe('fast');
      expect(chat.priceOptions).toEqual({ service_tier: 'fast' });
      expect(ignored).toEqual([]);
    });

    it('leaves a standard tier in the body, and out of priceOptions', () => {
      const { chat } = pipe().transform({ model: 'flat', messages: MESSAGES, service_tier: 'default' });
      expect(chat.body.service_tier).toBe('default');
      expect(chat.priceOptions).toBeUndefined();
    });

    it.each<[Record<string, unknown>, string]>([
      [{ service_tier: 'flex' }, 'service_tier'],
      [{ service_tier: 'priority' }, 'service_tier'],
      [{ speed: 'fast' }, 'speed'],
      [{ inference_geo: 'us' }, 'inference_geo'],
    ])('refuses %j on a model that does not price it: 400 unsupported_parameter, param %s', (fields, param) => {
      const model = fields.service_tier === 'priority' ? 'flat' : 'tiered';
      expect(refusal({ model, messages: MESSAGES, ...fields })).toMatchObject({ code: ErrorCode.UnsupportedParameter, param });
    });

    it('checks the body first: a malformed body is refused for that, whatever its tier', () => {
      expect(refusal({ model: 'flat', messages: [], service_tier: 'flex' })).toMatchObject({ code: ErrorCode.InvalidRequest, param: 'messages' });
      expect(refusal({ model: 'flat', messages: MESSAGES, service_tier: 7 })).toMatchObject({ code: ErrorCode.InvalidRequest, param: 'service_tier' });
    });
  });

  describe('store', () => {
    it('sends store: true as false and names it', () => {
      const body = { model: 'flat', messages: MESSAGES, store: true };
      const { chat, ignored } = pipe().transform(body);
      expect(chat.body.store).toBe(false);
      expect(ignored).toEqual([{ name: 'store', label: 'store' }]);
      // The client's parsed body is not edited in place.
      expect(body.store).toBe(true);
    });

    it('sends store: null as false, without naming it; store: false and no store as they are', () => {
      expect(pipe().transform({ model: 'flat', messages: MESSAGES, store: null })).toMatchObject({ chat: { body: { store: false } }, ignored: [] });
      expect(pipe().transform({ model: 'flat', messages: MESSAGES, store: false })).toMatchObject({ chat: { body: { store: false } }, ignored: [] });
      expect(pipe().transform({ model: 'flat', messages: MESSAGES }).chat.body).not.toHaveProperty('store');
    });

    it('refuses a store that is not a boolean', () => {
      expect(refusal({ model: 'flat', messages: MESSAGES, store: 'yes' })).toMatchObject({ code: ErrorCode.InvalidRequest, param: 'store' });
    });
  });
});
