import { CatalogEntry, DeploymentConfig, deploymentName, GatewayConfig } from '../config/gateway-config.schema';
import { ProviderRegistry } from '../providers/provider-registry';
import { ChatUpstream, SpeechUpstream, TokenCountUpstream, TranscriptionUpstream } from '../providers/upstream-provider';
import { CircuitBreaker } from './circuit-breaker';
import { Deployment } from './deployment';

/** How one catalog model is served: its deployments (by priority), and its retry rules. */
export class Route<U = unknown> {
  /** Set for a model with one provider/upstream_model pair: called directly. */
  readonly single: Deployment<U> | null;

  constructor(
    readonly deployments: Deployment<U>[],
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

/** Every catalog model's route, by the interface its kind calls; `all` in catalog order (the admin API's and the metrics' order). */
export class Routes {
  readonly chat = new Map<string, Route<ChatUpstream & Partial<TokenCountUpstream>>>();
  readonly transcription = new Map<string, Route<TranscriptionUpstream>>();
  readonly speech = new Map<string, Route<SpeechUpstream>>();
  readonly all: Route[] = [];

  add<U>(byId: Map<string, Route<U>>, entry: CatalogEntry, route: Route<U>): void {
    byId.set(entry.id, route);
    this.all.push(route);
  }
}

export function buildRoutes(config: GatewayConfig, providers: ProviderRegistry): Routes {
  const routes = new Routes();
  for (const entry of config.catalog) {
    switch (entry.kind) {
      case 'chat':
        routes.add(routes.chat, entry, buildRoute(entry, config, (view) => providers.chatFor(view)));
        break;
      case 'transcription':
        routes.add(routes.transcription, entry, buildRoute(entry, config, (view) => providers.transcriptionFor(view)));
        break;
      case 'speech':
        routes.add(routes.speech, entry, buildRoute(entry, config, (view) => providers.speechFor(view)));
        break;
    }
  }
  return routes;
}

function buildRoute<U>(entry: CatalogEntry, config: GatewayConfig, upstreamFor: (view: CatalogEntry) => U): Route<U> {
  const upstreams: Pick<DeploymentConfig, 'provider' | 'upstream_model' | 'weight' | 'priority'>[] = entry.deployments ?? [
    { provider: entry.provider, upstream_model: entry.upstream_model, weight: 1, priority: 0 },
  ];
  const deployments = upstreams.map((u) => {
    // The entry as the deployment's provider must see it; the entry itself for the single form.
    const view: CatalogEntry = entry.deployments ? { ...entry, provider: u.provider, upstream_model: u.upstream_model } : entry;
    const breaker = new CircuitBreaker(entry.failure_threshold, entry.cooldown_s * 1000);
    return new Deployment(entry.id, deploymentName(u), view, upstreamFor(view), u.weight, u.priority, breaker);
  });
  const budgetMs = 2 * Math.max(...upstreams.map((u) => config.providers[u.provider].timeouts.request_ms));
  return new Route(deployments, entry.deployments !== undefined, entry.retries, budgetMs);
}
