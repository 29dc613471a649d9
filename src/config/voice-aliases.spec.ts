import 'reflect-metadata';
import { join } from 'node:path';
import { ConfigError, loadGatewayConfig, validateGatewayConfig } from './gateway-config.loader';
import { PROVIDER_TYPES } from '../providers/provider-types';

type Raw = Record<string, any>;

const OPENAI_VOICES = ['alloy', 'ash', 'ballad', 'coral', 'echo', 'fable', 'nova', 'onyx', 'sage', 'shimmer', 'verse'];

function rawWithSpeech(speech: Raw): Raw {
  return {
    providers: { openai: { type: 'openai-compatible', base_url: 'https://api.openai.com/v1' }, local: { type: 'local' } },
    catalog: [
      { id: 'tts-1', kind: 'speech', provider: 'openai', upstream_model: 'tts-1', voices: ['warm', 'deep'], ...speech },
      { id: 'dev-echo', kind: 'chat', provider: 'local', upstream_model: 'dev-echo', input_price_per_million: 1, output_price_per_million: 1, max_output_tokens: 10 },
    ],
  };
}

/** The ConfigError's message for `raw` (failing the test when the configuration is accepted). */
function problemsOf(raw: Raw): string {
  const thrown = attempt(() => validateGatewayConfig(raw, PROVIDER_TYPES, 'gateway.yaml'));
  expect(thrown).toBeInstanceOf(ConfigError);
  return (thrown as ConfigError).message;
}

function attempt(action: () => unknown): unknown {
  try {
    action();
  } catch (err) {
    return err;
  }
  return null;
}

describe('voice_aliases in the catalog', () => {
  it('maps every OpenAI voice name of the shipped local-tts onto one of its own voices, all different', () => {
    const sut = loadGatewayConfig(join(__dirname, '../../config/gateway.yaml'), PROVIDER_TYPES).catalog.find((m) => m.id === 'local-tts')!;
    expect(Object.keys(sut.voice_aliases!).sort()).toEqual(OPENAI_VOICES);
    const targets = Object.values(sut.voice_aliases!);
    expect(new Set(targets).size).toBe(OPENAI_VOICES.length);
    for (const target of targets) expect(sut.voices).toContain(target);
    expect(sut.voices![0]).toBe('en-us');
  });

  it('accepts aliases onto the own voices, and aliases onto any voice for a model that lists none', () => {
    expect(validateGatewayConfig(rawWithSpeech({ voice_aliases: { alloy: 'warm', onyx: 'deep' } }), PROVIDER_TYPES).catalog[0].voice_aliases).toEqual({ alloy: 'warm', onyx: 'deep' });
    expect(() => validateGatewayConfig(rawWithSpeech({ voices: undefined, voice_aliases: { alloy: 'anything' } }), PROVIDER_TYPES)).not.toThrow();
  });

  it.each<[string, Raw, string]>([
    ['an alias onto a voice the model does not have', { voice_aliases: { alloy: 'warm', onyx: 'gravel' } }, 'catalog[0].voice_aliases.onyx: "gravel" is not one of the model\'s voices (warm, deep)'],
    ['a number as target', { voice_aliases: { alloy: 7 } }, 'catalog[0].voice_aliases.alloy: must be a non-empty string naming one of the model\'s voices (got 7)'],
    ['a list as target', { voice_aliases: { alloy: ['warm'] } }, 'catalog[0].voice_aliases.alloy: must be a non-empty string'],
    ['null as target', { voice_aliases: { alloy: null } }, 'catalog[0].voice_aliases.alloy: must be a non-empty string naming one of the model\'s voices (got null)'],
    ['an empty target', { voice_aliases: { alloy: '' } }, 'catalog[0].voice_aliases.alloy: must be a non-empty string'],
    ['an alias that hides an own voice', { voice_aliases: { deep: 'warm' } }, 'catalog[0].voice_aliases.deep: an alias must not be empty or the name of one of the model\'s own voices'],
    ['a list instead of a mapping', { voice_aliases: ['alloy'] }, 'catalog[0].voice_aliases: must be an object'],
    ['a string instead of a mapping', { voice_aliases: 'alloy=warm' }, 'catalog[0].voice_aliases: must be an object'],
    ['an empty mapping', { voice_aliases: {} }, 'catalog[0].voice_aliases: must not be empty'],
  ])('refuses %s, naming the field', (_name, speech, problem) => {
    const message = problemsOf(rawWithSpeech(speech));
    expect(message).toContain('gateway.yaml: invalid configuration');
    expect(message).toContain(problem);
  });

  it('refuses aliases on a model that is not a speech model', () => {
    const raw = rawWithSpeech({});
    raw.catalog[1].voice_aliases = { alloy: 'warm' };
    expect(problemsOf(raw)).toContain('catalog[1].voice_aliases: only speech models have voices');
  });

  it('refuses a local speech model without voices: espeak-ng gets only configured names', () => {
    const raw = rawWithSpeech({ provider: 'local', upstream_model: 'espeak-ng', voices: undefined });
    expect(problemsOf(raw)).toContain('catalog[0].voices: required for a speech model of a local provider');
  });

  it('refuses it too when only a later deployment is local', () => {
    const deployments = [{ provider: 'openai', upstream_model: 'tts-1' }, { provider: 'local', upstream_model: 'espeak-ng' }];
    const raw = rawWithSpeech({ provider: undefined, upstream_model: undefined, deployments, voices: undefined });
    expect(problemsOf(raw)).toContain('catalog[0].voices: required for a speech model of a local provider');
  });
});
