import 'reflect-metadata';
import { join } from 'node:path';
import { ConfigError, loadGatewayConfig, validateGatewayConfig } from './gateway-config.loader';
import { PROVIDER_TYPES } from '../providers/provider-types';
import { problemsWith, Raw, validRaw } from './config-spec-support';

const problemsOf = (edit: (raw: Raw) => void): string => problemsWith(PROVIDER_TYPES, edit);
describe('validateGatewayConfig', () => {
  it('accepts the example of DESIGN.md section 3 and fills in the defaults', () => {
    const sut = validateGatewayConfig(validRaw(), PROVIDER_TYPES);
    expect(sut.providers.openai.timeouts).toEqual({ connect_ms: 2000, request_ms: 60000 });
    expect(sut.limits).toMatchObject({
      chat_burst: { requests: 60, window_s: 10 },
      speech_max_input_chars: 4096,
      json_body_max_bytes: 10485760,
      transcription_max_bytes: 4 * 1024 * 1024,
    });
    expect(sut.fair_use.monthly_requests).toBe(1000);
  });

  it('accepts the shipped config/gateway.yaml', () => {
    const sut = loadGatewayConfig(join(__dirname, '../../config/gateway.yaml'), PROVIDER_TYPES);
    expect(sut.catalog.map((m) => m.id)).toEqual(expect.arrayContaining(['dev-echo']));
  });

  it.each<[string, (raw: Raw) => void, string]>([
    ['a provider of an unknown type', (r) => (r.providers.openai.type = 'azure'), 'providers.openai.type'],
    ['an openai-compatible provider without base_url', (r) => delete r.providers.openai.base_url, 'providers.openai.base_url'],
    ['a base_url that is not a URL', (r) => (r.providers.openai.base_url = 'api.openai.com'), 'providers.openai.base_url'],
    ['an api_key_env that is not a variable name', (r) => (r.providers.openai.api_key_env = 'sk-123 456'), 'providers.openai.api_key_env'],
    ['a zero connect timeout', (r) => (r.providers.openai.timeouts = { connect_ms: 0 }), 'providers.openai.timeouts.connect_ms'],
    ['a string request timeout', (r) => (r.providers.openai.timeouts = { request_ms: '60s' }), 'providers.openai.timeouts.request_ms'],
    ['an output_limit_field OpenAI has no such field for', (r) => (r.providers.openai.output_limit_field = 'max_output_tokens'), 'providers.openai.output_limit_field'],
    ['a negative price', (r) => (r.catalog[0].input_price_per_million = -1), 'catalog[0].input_price_per_million'],
    ['a chat model without an output price', (r) => delete r.catalog[0].output_price_per_million, 'catalog[0].output_price_per_million'],
    ['a fractional max_output_tokens', (r) => (r.catalog[0].max_output_tokens = 10.5), 'catalog[0].max_output_tokens'],
    ['an unknown kind', (r) => (r.catalog[1].kind = 'image'), 'catalog[1].kind'],
    ['an id with spaces', (r) => (r.catalog[0].id = 'gpt 4o'), 'catalog[0].id'],
    ['a missing upstream_model', (r) => delete r.catalog[2].upstream_model, 'catalog[2].upstream_model'],
    ['an unknown provider', (r) => (r.catalog[0].provider = 'nowhere'), 'catalog[0].provider'],
    ['a duplicate id', (r) => (r.catalog[2].id = 'gpt-4o-mini'), 'catalog[2].id'],
    ['an unsupported speech format', (r) => (r.catalog[2].response_formats = ['mp3', 'ogg']), 'catalog[2].response_formats'],
    ['an empty voice list', (r) => (r.catalog[2].voices = []), 'catalog[2].voices'],
    ['no active transcription model', (r) => (r.catalog[1].active = false), 'catalog: exactly one transcription model'],
    ['two active transcription models', (r) => r.catalog.push({ ...r.catalog[1], id: 'stt-2' }), 'catalog: exactly one transcription model'],
    ['an empty catalog', (r) => (r.catalog = []), 'catalog'],
    ['a zero burst limit', (r) => (r.limits = { chat_burst: { requests: 0 } }), 'limits.chat_burst.requests'],
    ['a tiny JSON body limit', (r) => (r.limits = { json_body_max_bytes: 10 }), 'limits.json_body_max_bytes'],
    ['a negative fair-use allowance', (r) => (r.fair_use = { monthly_requests: -1 }), 'fair_use.monthly_requests'],
    ['a local chat model other than dev-echo', (r) => r.catalog.push({ ...r.catalog[0], id: 'l', provider: 'local', upstream_model: 'llama' }), 'catalog[3].upstream_model'],
  ])('refuses %s, naming %s', (_name, edit, field) => {
    const message = problemsOf(edit);
    expect(message).toContain('gateway.yaml');
    expect(message).toContain(field);
  });

  it('accepts aliases on any kind of entry, and the shipped aliases of local-tts', () => {
    const raw = validRaw();
    raw.catalog[0].aliases = ['gpt-4o-mini-2024-07-18', 'org/mini:latest'];
    raw.catalog[2].aliases = ['tts-1-hd'];
    const sut = validateGatewayConfig(raw, PROVIDER_TYPES);
    expect(sut.catalog.map((m) => m.aliases)).toEqual([['gpt-4o-mini-2024-07-18', 'org/mini:latest'], undefined, ['tts-1-hd']]);
    const shipped = loadGatewayConfig(join(__dirname, '../../config/gateway.yaml'), PROVIDER_TYPES);
    expect(shipped.catalog.find((m) => m.id === 'local-tts')?.aliases).toEqual(['tts-1', 'tts-1-hd', 'gpt-4o-mini-tts']);
  });

  it("accepts alias patterns, and the shipped patterns of dev-echo (Claude Code's and Codex's default models)", () => {
    const raw = validRaw();
    raw.catalog[0].aliases = ['gpt-4o-mini-*', '*-mini', 'org/*:*', '*'];
    expect(validateGatewayConfig(raw, PROVIDER_TYPES).catalog[0].aliases).toEqual(['gpt-4o-mini-*', '*-mini', 'org/*:*', '*']);
    const shipped = loadGatewayConfig(join(__dirname, '../../config/gateway.yaml'), PROVIDER_TYPES);
    expect(shipped.catalog.find((m) => m.id === 'dev-echo')?.aliases).toEqual(['claude-*', 'gpt-*-sol']);
  });

  it.each<[string, (raw: Raw) => void, string]>([
    ['an alias that is another entry\'s id', (r) => (r.catalog[2].aliases = ['gpt-4o-mini']), 'catalog[2].aliases[0]: "gpt-4o-mini" is already the id of catalog[0]'],
    ['an alias that is its own entry\'s id', (r) => (r.catalog[2].aliases = ['hd', 'tts-1']), 'catalog[2].aliases[1]: "tts-1" is already the id of catalog[2]'],
    ['an id that an earlier entry has as alias', (r) => (r.catalog[0].aliases = ['tts-1']), 'catalog[0].aliases[0]: "tts-1" is already the id of catalog[2]'],
    [
      'an alias of two entries',
      (r) => {
        r.catalog[0].aliases = ['shared'];
        r.catalog[2].aliases = ['shared'];
      },
      'catalog[2].aliases[0]: "shared" is already an alias of catalog[0] (gpt-4o-mini)',
    ],
    ['an alias twice in one list', (r) => (r.catalog[2].aliases = ['hd', 'hd']), 'catalog[2].aliases[1]: "hd" is already an alias of catalog[2] (tts-1)'],
    ['an alias outside the id alphabet', (r) => (r.catalog[2].aliases = ['tts 1']), 'catalog[2].aliases: each alias must hold only letters, digits and . _ : / - (as an id), and * as a wildcard (got ["tts 1"])'],
    ['a pattern with another wildcard than *', (r) => (r.catalog[2].aliases = ['tts-?']), 'catalog[2].aliases: each alias must hold only letters, digits and . _ : / - (as an id), and * as a wildcard (got ["tts-?"])'],
    ['a pattern with ** in it', (r) => (r.catalog[2].aliases = ['hd', 'tts-**']), 'catalog[2].aliases[1]: the pattern "tts-**" holds ** (one * already matches any run of characters)'],
    [
      'a pattern of two entries',
      (r) => {
        r.catalog[0].aliases = ['gpt-*'];
        r.catalog[2].aliases = ['gpt-*'];
      },
      'catalog[2].aliases[0]: "gpt-*" is already an alias of catalog[0] (gpt-4o-mini)',
    ],
    ['an alias that is not a string', (r) => (r.catalog[2].aliases = [1]), 'catalog[2].aliases: each alias must be a string (got [1])'],
    ['aliases that are not a list', (r) => (r.catalog[2].aliases = 'tts-1-hd'), 'catalog[2].aliases: must be an array (got "tts-1-hd")'],
  ])('refuses %s, naming the alias', (_name, edit, problem) => {
    expect(problemsOf(edit)).toContain(problem);
  });

  it("accepts a chat model's token-class prices", () => {
    const raw = validRaw();
    Object.assign(raw.catalog[0], {
      cached_input_price_per_million: 0.075,
      cache_write_price_per_million: 0.1875,
      cache_write_1h_price_per_million: 0.3,
      audio_input_price_per_million: 10,
      audio_output_price_per_million: 20,
    });
    const [sut] = validateGatewayConfig(raw, PROVIDER_TYPES).catalog;
    expect(sut).toMatchObject({
      cached_input_price_per_million: 0.075,
      cache_write_price_per_million: 0.1875,
      cache_write_1h_price_per_million: 0.3,
      audio_input_price_per_million: 10,
      audio_output_price_per_million: 20,
    });
  });

  it.each([
    'cached_input_price_per_million',
    'cache_write_price_per_million',
    'cache_write_1h_price_per_million',
    'audio_input_price_per_million',
    'audio_output_price_per_million',
  ])(
    'refuses a negative, non-numeric, empty or too fine %s, naming it',
    (field) => {
      for (const value of [-0.5, '1.25', null, true, 0.0000001, 1e13]) {
        const message = problemsOf((r) => (r.catalog[0][field] = value));
        expect([value, message]).toEqual([value, expect.stringContaining(`catalog[0].${field}:`)]);
      }
    },
  );

  it('refuses a base price finer than a millionth of a dollar per million tokens at start', () => {
    expect(problemsOf((r) => (r.catalog[0].input_price_per_million = 0.0000001))).toContain('catalog[0].input_price_per_million: must have at most 6 decimals');
  });

  it.each<[string, (raw: Raw) => void, string]>([
    ['a misspelt top-level key', (r) => (r.limit = { chat_burst: { requests: 1 } }), 'limit: unknown key'],
    ['a misspelt limits key', (r) => (r.limits = { chat_brust: { requests: 1 } }), 'limits.chat_brust: unknown key'],
    ['a misspelt provider key', (r) => (r.providers.openai.api_key = 'sk-123'), 'providers.openai.api_key: unknown key'],
    ['a misspelt timeout key', (r) => (r.providers.openai.timeouts = { request_timeout: 5 }), 'providers.openai.timeouts.request_timeout: unknown key'],
    ['a misspelt catalog key', (r) => (r.catalog[0].max_tokens = 10), 'catalog[0].max_tokens: unknown key'],
    ['a key of another provider type', (r) => (r.providers.local.base_url = 'http://localhost:8000/v1'), 'providers.local.base_url: unknown key'],
  ])('refuses %s rather than ignoring it', (_name, edit, problem) => {
    expect(problemsOf(edit)).toContain(problem);
  });

  describe('the kinds each provider type serves', () => {
    // Every type serves every kind today: narrow one, as a chat-only type (DESIGN.md section 11) will be.
    beforeEach(() => jest.replaceProperty(PROVIDER_TYPES.local, 'kinds', ['chat']));
    afterEach(() => jest.restoreAllMocks());

    it('accepts an entry of a kind its provider serves', () => {
      const raw = validRaw();
      raw.catalog.push({ ...raw.catalog[0], id: 'echo', provider: 'local', upstream_model: 'dev-echo' });
      expect(() => validateGatewayConfig(raw, PROVIDER_TYPES)).not.toThrow();
    });

    it.each<[string, (raw: Raw) => void, string]>([
      [
        'an entry whose provider does not serve its kind',
        (r) => r.catalog.push({ id: 'voice', kind: 'speech', provider: 'local', upstream_model: 'espeak', voices: ['en'] }),
        'catalog[3].provider: provider "local" is of type local, which serves chat models, not speech',
      ],
      [
        'a deployment whose provider does not serve the entry\'s kind',
        (r) => {
          const { provider: _p, upstream_model: _u, ...speech } = r.catalog[2];
          r.catalog[2] = { ...speech, voices: ['alloy'], deployments: [{ provider: 'openai', upstream_model: 'tts-1' }, { provider: 'local', upstream_model: 'espeak' }] };
        },
        'catalog[2].deployments[1].provider: provider "local" is of type local, which serves chat models, not speech',
      ],
    ])('refuses %s at start, naming the field', (_name, edit, problem) => {
      expect(problemsOf(edit)).toContain(problem);
    });
  });

  describe('the bedrock type', () => {
    const bedrock = (r: Raw, extra: Raw = {}) => {
      r.providers.aws = { type: 'bedrock', region: 'us-east-1', access_key_id_env: 'AWS_KEY_ID', secret_access_key_env: 'AWS_SECRET', ...extra };
    };

    it('accepts a region with credentials from env vars or the default chain, an endpoint override and a chat entry', () => {
      const raw = validRaw();
      bedrock(raw, { base_url: 'https://bedrock-runtime.us-east-1.amazonaws.com', session_token_env: 'AWS_TOKEN', max_connections: 8 });
      raw.providers.chain = { type: 'bedrock', region: 'eu-west-3' };
      raw.catalog.push({ ...raw.catalog[0], id: 'claude', provider: 'aws', upstream_model: 'anthropic.claude-sonnet-4-5-20250929-v1:0', auto_cache: true });
      expect(validateGatewayConfig(raw, PROVIDER_TYPES).providers.aws).toMatchObject({ type: 'bedrock', region: 'us-east-1', max_connections: 8, timeouts: { connect_ms: 2000, request_ms: 60000 } });
    });

    it.each<[string, (raw: Raw) => void, string]>([
      ['a bedrock provider without region', (r) => bedrock(r, { region: undefined }), 'providers.aws.region'],
      ['a region that is not one', (r) => bedrock(r, { region: 'virginia' }), 'providers.aws.region'],
      ['an access key id without its secret', (r) => bedrock(r, { secret_access_key_env: undefined }), 'providers.aws.secret_access_key_env'],
      ['an api_key_env (AWS signs with key pairs)', (r) => bedrock(r, { api_key_env: 'KEY' }), 'providers.aws.api_key_env: unknown key'],
      [
        'a transcription entry on bedrock, which serves chat only',
        (r) => {
          bedrock(r);
          r.catalog[1].provider = 'aws';
        },
        'catalog[1].provider: provider "aws" is of type bedrock, which serves chat models, not transcription',
      ],
    ])('refuses %s at start, naming the field', (_name, edit, problem) => {
      expect(problemsOf(edit)).toContain(problem);
    });
  });

  describe('the azure-openai type', () => {
    const withAzure = (fields: Raw = {}) => (r: Raw) => {
      r.providers.azure = { type: 'azure-openai', base_url: 'https://res.openai.azure.com', api_version: '2024-10-21', api_key_env: 'AZURE_OPENAI_API_KEY', ...fields };
    };

    it('serves chat, transcription and speech deployments, with one api_version', () => {
      const raw = validRaw();
      withAzure({ output_limit_field: 'max_tokens' })(raw);
      for (const entry of raw.catalog) entry.provider = 'azure';
      const sut = validateGatewayConfig(raw, PROVIDER_TYPES);
      expect(sut.providers.azure).toMatchObject({ type: 'azure-openai', api_version: '2024-10-21', max_connections: 256, output_limit_field: 'max_tokens' });
    });

    it.each<[string, Raw, string]>([
      ['without api_version', { api_version: undefined }, 'providers.azure.api_version'],
      ['with an api_version that is not a dated version', { api_version: 'latest' }, 'providers.azure.api_version: must be a dated API version'],
      ['without base_url', { base_url: undefined }, 'providers.azure.base_url'],
      ['with a key of another type', { region: 'westeurope' }, 'providers.azure.region: unknown key'],
    ])('refuses a provider %s, naming the field', (_name, fields, problem) => {
      expect(problemsOf(withAzure(fields))).toContain(problem);
    });
  });

  it('does not echo the value of an unknown key (it may be a secret)', () => {
    expect(problemsOf((r) => (r.providers.openai.api_key = 'sk-secret-123'))).not.toContain('sk-secret-123');
  });

  it('lists every problem at once', () => {
    const message = problemsOf((r) => {
      r.catalog[0].input_price_per_million = -1;
      r.providers.openai.base_url = 'nope';
    });
    expect(message).toContain('catalog[0].input_price_per_million');
    expect(message).toContain('providers.openai.base_url');
  });

  it.each([
    ['a YAML list', ['a']],
    ['a scalar', 'providers'],
    ['nothing', null],
    ['providers as a list', { providers: ['openai'], catalog: [] }],
  ])('refuses a document that is %s', (_name, raw) => {
    expect(() => validateGatewayConfig(raw, PROVIDER_TYPES, 'gateway.yaml')).toThrow(ConfigError);
  });

  it('names the file when it cannot be read', () => {
    expect(() => loadGatewayConfig('/nonexistent/gateway.yaml', PROVIDER_TYPES)).toThrow(/\/nonexistent\/gateway\.yaml: cannot read YAML/);
  });
});
