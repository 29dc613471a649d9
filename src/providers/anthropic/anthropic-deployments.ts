import type { CatalogEntry, GatewayConfig } from '../../config/gateway-config.schema';

/** How many of a model's deployments are `anthropic` providers: a Messages request is passed through to those. */
export type AnthropicShare = 'all' | 'some' | 'none';

export function anthropicShare(config: GatewayConfig, model: CatalogEntry): AnthropicShare {
  const providers = model.deployments?.map((d) => d.provider) ?? [model.provider];
  const anthropic = providers.filter((name) => config.providers[name]?.type === 'anthropic').length;
  return anthropic === 0 ? 'none' : anthropic === providers.length ? 'all' : 'some';
}
