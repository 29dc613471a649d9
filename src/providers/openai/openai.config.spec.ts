import 'reflect-metadata';
import { ConfigError, validateGatewayConfig } from '../../config/gateway-config.loader';
import { PROVIDER_TYPES } from '../provider-types';
import { OpenAiProviderConfig } from './openai.config';

type Raw = Record<string, any>;

const CHAT = { kind: 'chat', input_price_per_million: 1.25, output_price_per_million: 10, max_output_tokens: 128000 };

function raw(edit: (r: Raw) => void = () => undefined): Raw {
  const r: Raw = {
    providers: { openai: { type: 'openai', api_key_env: 'OPENAI_API_KEY' }, other: { type: 'openai-compatible', base_url: 'https://api.groq.com/openai/v1' } },
    catalog: [
      { id: 'gpt-5', provider: 'openai', upstream_model: 'gpt-5', ...CHAT },
      { id: 'codex', provider: 'openai', upstream_model: 'gpt-5-codex', upstream_api: 'responses', ...CHAT },
      { id: 'whisper', kind: 'transcription', provider: 'openai', upstream_model: 'whisper-1', active: true },
      { id: 'tts', kind: 'speech', provider: 'openai', upstream_model: 'tts-1', voices: ['alloy'] },
    ],
  };
  edit(r);
  return r;
}

function problems(edit: (r: Raw) => void): string {
  try {
    validateGatewayConfig(raw(edit), PROVIDER_TYPES, 'gateway.yaml');
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('the configuration was accepted');
}

describe('provider type openai, catalog upstream_api', () => {
  it("serves chat, transcription and speech, at OpenAI's own base_url unless told; upstream_api defaults to chat", () => {
    const config = validateGatewayConfig(raw(), PROVIDER_TYPES);
    expect(config.providers.openai).toBeInstanceOf(OpenAiProviderConfig);
    expect(config.providers.openai).toMatchObject({ base_url: 'https://api.openai.com/v1', max_connections: 256, timeouts: { connect_ms: 2000, request_ms: 60000 } });
    expect(config.catalog.map((m) => m.upstream_api)).toEqual([undefined, 'responses', undefined, undefined]);
  });

  it.each<[string, (r: Raw) => void, RegExp]>([
    ['upstream_api responses on a model with a deployment of another type', (r) => (r.catalog[1] = { id: 'codex', upstream_api: 'responses', deployments: [{ provider: 'openai', upstream_model: 'a' }, { provider: 'other', upstream_model: 'b' }], ...CHAT }), /catalog\[1\]\.upstream_api: "responses" needs every deployment on a provider of type openai, and provider "other" is of type openai-compatible/],
    ['upstream_api responses on an openai-compatible provider', (r) => (r.catalog[1].provider = 'other'), /catalog\[1\]\.upstream_api: .*provider "other"/],
    ['upstream_api responses on a speech model', (r) => (r.catalog[3].upstream_api = 'responses'), /catalog\[3\]\.upstream_api: "responses" is for chat models/],
    ['an upstream_api that is neither', (r) => (r.catalog[0].upstream_api = 'completions'), /catalog\[0\]\.upstream_api/],
    ["openai-compatible's output_limit_field", (r) => (r.providers.openai.output_limit_field = 'max_tokens'), /providers\.openai\.output_limit_field: unknown key/],
    ['a base_url that is no URL', (r) => (r.providers.openai.base_url = 'api.openai.com'), /providers\.openai\.base_url/],
  ])('refuses %s, naming the field', (_name, edit, message) => {
    expect(problems(edit)).toMatch(message);
  });
});
