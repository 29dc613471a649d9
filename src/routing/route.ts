import { CatalogEntry, DeploymentConfig, deploymentName, GatewayConfig } from '../config/gateway-config.schema';
import { ProviderRegistry } from '../providers/provider-registry';
import { CircuitBreaker } from './circuit-breaker';
import { Deployment } from './deployment';

/** How one catalog model is served: its deployments (by priority), and its retry rules. */
export class Route {
  /** Set for a model with one provider/upstream_model pair: called directly. */
  readonly single: Deployment | null;

  constructor(
    readonly deployments: Deployment[],
    routed: boolean,
    readonly retries: number,
    /** The whole request's time across attempts: twice the longest request timeout among its providers (one hung attempt leaves room for another). */
    readonly budgetMs: number,
  ) {
    this.single = routed ? null : deployments[0];
  }

  /** Milliseconds until any deployment lets a request through. */
  availableInMs(now: number): number {
    return Math.min(...this.deployments.map((d) => d.breaker.availableInMs(now)));
  }
}

export function buildRoutes(config: GatewayConfig, providers: ProviderRegistry): Map<string, Route> {
  return new Map(config.catalog.map((entry) => [entry.id, buildRoute(entry, config, providers)]));
}

function buildRoute(entry: CatalogEntry, config: GatewayConfig, providers: ProviderRegistry): Route {
  const upstreams: Pick<DeploymentConfig, 'provider' | 'upstream_model' | 'weight' | 'priority'>[] = entry.deployments ?? [
    { provider: entry.provider, upstream_model: entry.upstream_model, weight: 1, priority: 0 },
  ];
  const deployments = upstreams.map((u) => {
    // The entry as the deployment's provider must see it; the entry itself for the single form.
    const view: CatalogEntry = entry.deployments ? { ...entry, provider: u.provider, upstream_model: u.upstream_model } : entry;
    const breaker = new CircuitBreaker(entry.failure_threshold, entry.cooldown_s * 1000);
    return new Deployment(entry.id, deploymentName(u), view, providers.forModel(view), u.weight, u.priority, breaker);
  });
  const budgetMs = 2 * Math.max(...upstreams.map((u) => config.providers[u.provider].timeouts.request_ms));
  return new Route(deployments, entry.deployments !== undefined, entry.retries, budgetMs);
}
