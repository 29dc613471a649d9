import 'reflect-metadata';
import { ConfigError, validateGatewayConfig } from './gateway-config.loader';
import { PROVIDER_TYPES } from '../providers/provider-types';

type Raw = Record<string, any>;

/** Two vLLM servers and a hosted fallback, as in docs/configuration.md. */
function rawWithDeployments(edit: (model: Raw) => void = () => undefined): Raw {
  const model: Raw = {
    id: 'llama-3.1-8b',
    kind: 'chat',
    deployments: [
      { provider: 'vllm-a', upstream_model: 'meta-llama/Llama-3.1-8B-Instruct', weight: 3 },
      { provider: 'vllm-b', upstream_model: 'meta-llama/Llama-3.1-8B-Instruct' },
      { provider: 'together', upstream_model: 'meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo', priority: 1 },
    ],
    input_price_per_million: 0.2,
    output_price_per_million: 0.2,
    max_output_tokens: 4096,
  };
  edit(model);
  return {
    providers: {
      'vllm-a': { type: 'openai-compatible', base_url: 'http://10.0.0.11:8000/v1' },
      'vllm-b': { type: 'openai-compatible', base_url: 'http://10.0.0.12:8000/v1' },
      together: { type: 'openai-compatible', base_url: 'https://api.together.xyz/v1', api_key_env: 'TOGETHER_API_KEY' },
      local: { type: 'local' },
    },
    catalog: [model],
  };
}

function problemsOf(edit: (model: Raw) => void): string {
  try {
    validateGatewayConfig(rawWithDeployments(edit), PROVIDER_TYPES, 'gateway.yaml');
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('the configuration was accepted');
}

describe('catalog deployments', () => {
  it('fills in weight, priority, retries, failure_threshold and cooldown_s, and makes the first deployment the primary', () => {
    const [sut] = validateGatewayConfig(rawWithDeployments(), PROVIDER_TYPES).catalog;
    expect(sut.deployments!.map(({ weight, priority }) => ({ weight, priority }))).toEqual([
      { weight: 3, priority: 0 },
      { weight: 1, priority: 0 },
      { weight: 1, priority: 1 },
    ]);
    expect(sut).toMatchObject({ retries: 2, failure_threshold: 5, cooldown_s: 30, provider: 'vllm-a', upstream_model: 'meta-llama/Llama-3.1-8B-Instruct' });
  });

  it('keeps the single provider/upstream_model form unchanged', () => {
    const [sut] = validateGatewayConfig(rawWithDeployments((m) => {
      delete m.deployments;
      Object.assign(m, { provider: 'vllm-a', upstream_model: 'llama' });
    }), PROVIDER_TYPES).catalog;
    expect(sut).toMatchObject({ provider: 'vllm-a', upstream_model: 'llama', retries: 2 });
    expect(sut.deployments).toBeUndefined();
  });

  it('accepts a configuration read back from a loaded one (provider/upstream_model filled in)', () => {
    const loaded = JSON.parse(JSON.stringify(validateGatewayConfig(rawWithDeployments(), PROVIDER_TYPES)));
    expect(validateGatewayConfig(loaded, PROVIDER_TYPES).catalog[0].deployments).toHaveLength(3);
  });

  it.each<[string, (m: Raw) => void, string]>([
    ['an unknown provider', (m) => (m.deployments[1].provider = 'nowhere'), 'catalog[0].deployments[1].provider: unknown provider "nowhere"'],
    ['a missing upstream_model', (m) => delete m.deployments[2].upstream_model, 'catalog[0].deployments[2].upstream_model'],
    ['a zero weight', (m) => (m.deployments[0].weight = 0), 'catalog[0].deployments[0].weight'],
    ['a negative priority', (m) => (m.deployments[0].priority = -1), 'catalog[0].deployments[0].priority'],
    ['an empty list', (m) => (m.deployments = []), 'catalog[0].deployments'],
    ['a misspelt deployment key', (m) => (m.deployments[0].wieght = 2), 'catalog[0].deployments[0].wieght: unknown key'],
    ['the same deployment twice', (m) => m.deployments.push({ ...m.deployments[0] }), 'catalog[0].deployments[3]: the same provider and upstream_model twice'],
    ['both forms at once', (m) => (m.provider = 'together'), 'catalog[0].deployments: give either provider/upstream_model or deployments, not both'],
    ['neither form', (m) => delete m.deployments, 'catalog[0].provider'],
    ['negative retries', (m) => (m.retries = -1), 'catalog[0].retries'],
    ['a zero failure_threshold', (m) => (m.failure_threshold = 0), 'catalog[0].failure_threshold'],
    ['a zero cooldown_s', (m) => (m.cooldown_s = 0), 'catalog[0].cooldown_s'],
    ['a local chat deployment other than dev-echo', (m) => m.deployments.push({ provider: 'local', upstream_model: 'llama' }), 'catalog[0].deployments[3].upstream_model'],
  ])('refuses %s, naming the field', (_name, edit, problem) => {
    expect(problemsOf(edit)).toContain(problem);
  });
});
