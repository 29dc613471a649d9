import 'reflect-metadata';
import { join } from 'node:path';
import { loadGatewayConfig, validateGatewayConfig } from './gateway-config.loader';
import { PROVIDER_TYPES } from '../providers/provider-types';

describe('webhooks config', () => {
  const base = () => JSON.parse(JSON.stringify(loadGatewayConfig(join(__dirname, '../../config/gateway.yaml'), PROVIDER_TYPES)));
  const withHooks = (webhooks: unknown, delivery?: unknown) => ({ ...base(), webhooks, ...(delivery ? { webhook_delivery: delivery } : {}) });

  beforeAll(() => (process.env.WEBHOOKS_SPEC_SECRET = 'whsec-spec'));
  afterAll(() => delete process.env.WEBHOOKS_SPEC_SECRET);

  it('takes receivers with a url, the variable holding their secret and their events; none by default', () => {
    const config = validateGatewayConfig(withHooks([{ url: 'https://alerts.example.com/in', secret_env: 'WEBHOOKS_SPEC_SECRET', events: ['budget.threshold', 'key.expiring'] }]), PROVIDER_TYPES);
    expect(config.webhooks).toEqual([{ url: 'https://alerts.example.com/in', secret_env: 'WEBHOOKS_SPEC_SECRET', events: ['budget.threshold', 'key.expiring'] }]);
    expect(config.webhook_delivery).toMatchObject({ retry_base_ms: 10_000, retry_for_s: 86_400 });
    expect(validateGatewayConfig(base(), PROVIDER_TYPES).webhooks).toEqual([]);
  });

  it.each([
    [[{ url: 'https://a.example.com', secret_env: 'WEBHOOKS_SPEC_SECRET', events: ['budget.exceeded'] }], 'webhooks[0].events'],
    [[{ url: 'https://a.example.com', secret_env: 'WEBHOOKS_SPEC_UNSET', events: ['credits.low'] }], 'webhooks[0].secret_env: names the environment variable "WEBHOOKS_SPEC_UNSET", which is not set'],
    [[{ url: 'not a url', secret_env: 'WEBHOOKS_SPEC_SECRET', events: ['credits.low'] }], 'webhooks[0].url'],
    [[{ url: 'https://a.example.com', secret_env: 'WEBHOOKS_SPEC_SECRET', events: [] }], 'webhooks[0].events'],
    [[{ url: 'https://a.example.com', secret: 'inline', secret_env: 'WEBHOOKS_SPEC_SECRET', events: ['credits.low'] }], 'webhooks[0].secret: unknown key'],
  ])('refuses %j at start, naming the field', (webhooks, field) => {
    expect(() => validateGatewayConfig(withHooks(webhooks), PROVIDER_TYPES)).toThrow(field);
  });

  it('refuses a retry base of zero', () => {
    expect(() => validateGatewayConfig(withHooks([], { retry_base_ms: 0 }), PROVIDER_TYPES)).toThrow('webhook_delivery.retry_base_ms');
  });
});
