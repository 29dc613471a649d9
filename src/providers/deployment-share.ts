import type { CatalogEntry, GatewayConfig } from '../config/gateway-config.schema';

/** How many of a model's deployments are providers of one type: a request in that type's dialect is passed through to those. */
export type DeploymentShare = 'all' | 'some' | 'none';

/** Whether all, some or none of a model's deployments are on providers of `type` (`anthropic`: Messages; `openai`: Responses). */
export function deploymentShare(config: GatewayConfig, model: CatalogEntry, type: string): DeploymentShare {
  const providers = model.deployments?.map((d) => d.provider) ?? [model.provider];
  const ofType = providers.filter((name) => config.providers[name]?.type === type).length;
  return ofType === 0 ? 'none' : ofType === providers.length ? 'all' : 'some';
}
