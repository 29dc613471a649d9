import 'reflect-metadata';
import { validateGatewayConfig } from './gateway-config.loader';
import { PROVIDER_TYPES } from '../providers/provider-types';
import { problemsWith, Raw, validRaw } from './config-spec-support';

const problemsOf = (edit: (raw: Raw) => void): string => problemsWith(PROVIDER_TYPES, edit);

describe('the gemini provider type', () => {
  const withGemini = (edit: (raw: Raw) => void = () => undefined) => (raw: Raw) => {
    raw.providers.gemini = { type: 'gemini', base_url: 'https://generativelanguage.googleapis.com', api_key_env: 'GEMINI_API_KEY' };
    raw.catalog.push({ ...raw.catalog[0], id: 'gemini-flash', provider: 'gemini', upstream_model: 'gemini-2.5-flash' });
    edit(raw);
  };

  it('accepts a chat model on a gemini provider, with the transport defaults', () => {
    const raw = validRaw();
    withGemini()(raw);
    const sut = validateGatewayConfig(raw, PROVIDER_TYPES);
    expect(sut.providers.gemini).toMatchObject({ type: 'gemini', max_connections: 256, timeouts: { connect_ms: 2000, request_ms: 60000 } });
  });

  it.each<[string, (raw: Raw) => void, string]>([
    ['a transcription model on it', (r) => r.catalog.push({ id: 'gemini-stt', kind: 'transcription', provider: 'gemini', upstream_model: 'gemini-2.5-flash' }), 'catalog[4].provider: provider "gemini" is of type gemini, which serves chat models, not transcription'],
    ['a speech deployment on it', (r) => {
      const { provider: _p, upstream_model: _u, ...speech } = r.catalog[2];
      r.catalog[2] = { ...speech, deployments: [{ provider: 'openai', upstream_model: 'tts-1' }, { provider: 'gemini', upstream_model: 'gemini-2.5-flash-preview-tts' }] };
    }, 'catalog[2].deployments[1].provider: provider "gemini" is of type gemini, which serves chat models, not speech'],
    ['no base_url', (r) => delete r.providers.gemini.base_url, 'providers.gemini.base_url'],
    ['a key of another type (bedrock\'s region)', (r) => (r.providers.gemini.region = 'us-east-1'), 'providers.gemini.region: unknown key'],
  ])('refuses %s at start, naming the field', (_name, edit, problem) => {
    expect(problemsOf(withGemini(edit))).toContain(problem);
  });
});
