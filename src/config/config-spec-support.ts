import 'reflect-metadata';
import { ConfigError, validateGatewayConfig } from './gateway-config.loader';
import type { ProviderConfigTypes } from './provider-configs.schema';

/**
 * What the config specs share: a valid raw configuration, and the problems an edit of it makes the loader name under
 * the provider types the spec hands it (providers/ sits above config/: a spec imports them, this file does not).
 */

export type Raw = Record<string, any>;

export function validRaw(): Raw {
  return {
    providers: {
      openai: { type: 'openai-compatible', base_url: 'https://api.openai.com/v1', api_key_env: 'OPENAI_API_KEY' },
      local: { type: 'local' },
    },
    catalog: [
      {
        id: 'gpt-4o-mini',
        kind: 'chat',
        provider: 'openai',
        upstream_model: 'gpt-4o-mini',
        input_price_per_million: 0.15,
        output_price_per_million: 0.6,
        max_output_tokens: 16384,
      },
      { id: 'whisper-large-v3', kind: 'transcription', provider: 'openai', upstream_model: 'whisper-1', active: true },
      { id: 'tts-1', kind: 'speech', provider: 'openai', upstream_model: 'tts-1', voices: ['alloy', 'echo'] },
    ],
  };
}

export function problemsWith(types: ProviderConfigTypes, edit: (raw: Raw) => void): string {
  const raw = validRaw();
  edit(raw);
  try {
    validateGatewayConfig(raw, types, 'gateway.yaml');
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('the configuration was accepted');
}

