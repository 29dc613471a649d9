import { Inject, Injectable, Logger } from '@nestjs/common';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { CatalogEntry, GatewayConfig } from '../config/gateway-config.schema';
import { DeploymentSample, MetricsService } from '../metrics/metrics.service';
import { ProviderRegistry } from '../providers/provider-registry';
import { logCredentialsRefused, UpstreamFailure } from '../providers/upstream-failure';
import {
  ChatRequestBody,
  SpeechAudio,
  SpeechInput,
  TranscriptionInput,
  UpstreamChatJson,
  UpstreamChatStream,
  VerboseTranscription,
} from '../providers/upstream-provider';
import { Deployment, ServedBy } from './deployment';
import { chooseDeployment, TriedSet, withTried } from './deployment-chooser';
import { buildRoutes, Route, Routes } from './route';
import { CHAT, CHAT_STREAM, COUNT_TOKENS, Operation, SPEECH, TokenCountInput, TRANSCRIBE } from './routing-operations';
import { allDeploymentsOut, budgetSpent, countsAgainstDeployment, isRetryable } from './upstream-errors';

/** Where the router reports who served a request (the request's UsageMeter), and the request's id for its log lines. */
export interface ServedListener {
  readonly requestId?: string;
  describe(served: ServedBy): void;
}

/**
 * Calls the upstream of a catalog model: its one provider, or (a model listing `deployments`) the deployment
 * chosen by weight, load and circuit, retried on another before the answer's headers (docs/configuration.md,
 * "Deployments"). Every method throws what its provider throws (UpstreamFailure), or 503 upstream_unavailable
 * when every deployment is out.
 */
@Injectable()
export class UpstreamRouter {
  private readonly logger = new Logger(UpstreamRouter.name);
  private readonly routes: Routes;

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig, providers: ProviderRegistry, metrics: MetricsService) {
    this.routes = buildRoutes(config, providers);
    metrics.watchDeployments(() => this.samples());
  }

  chat(model: CatalogEntry, body: ChatRequestBody, signal: AbortSignal, served?: ServedListener): Promise<UpstreamChatJson> {
    return this.call(this.routes.chat, model, CHAT, body, signal, served);
  }

  chatStream(model: CatalogEntry, body: ChatRequestBody, signal: AbortSignal, served?: ServedListener): Promise<UpstreamChatStream> {
    return this.call(this.routes.chat, model, CHAT_STREAM, body, signal, served);
  }

  /** Messages' count_tokens, by the deployment that would serve the request (its upstream's count, else `input.counted`). */
  countTokens(model: CatalogEntry, input: TokenCountInput, signal: AbortSignal, served?: ServedListener): Promise<Record<string, unknown>> {
    return this.call(this.routes.chat, model, COUNT_TOKENS, input, signal, served);
  }

  transcribe(model: CatalogEntry, input: TranscriptionInput, signal: AbortSignal, served?: ServedListener): Promise<VerboseTranscription> {
    return this.call(this.routes.transcription, model, TRANSCRIBE, input, signal, served);
  }

  speech(model: CatalogEntry, input: SpeechInput, signal: AbortSignal, served?: ServedListener): Promise<SpeechAudio> {
    return this.call(this.routes.speech, model, SPEECH, input, signal, served);
  }

  /** Every deployment of every model, in catalog order. */
  deployments(): Deployment[] {
    return this.routes.all.flatMap((r) => r.deployments);
  }

  private call<U, I, T>(routes: Map<string, Route<U>>, model: CatalogEntry, op: Operation<U, I, T>, input: I, signal: AbortSignal, served?: ServedListener): Promise<T> {
    const route = routes.get(model.id)!;
    return route.single ? this.callOnce(route.single, op, input, signal, served) : this.callRouted(model, route, op, input, signal, served);
  }

  /** A model with one provider/upstream_model pair: one attempt, no circuit, as before routing existed. */
  private async callOnce<U, I, T>(d: Deployment<U>, op: Operation<U, I, T>, input: I, signal: AbortSignal, served?: ServedListener): Promise<T> {
    served?.describe(d.servedFirst);
    const startedAt = performance.now();
    let failed = false;
    d.inFlight++;
    try {
      return await op.send(d, input, signal);
    } catch (err) {
      failed = !signal.aborted && countsAgainstDeployment(err);
      logCredentialsRefused(this.logger, err, served?.requestId);
      throw err;
    } finally {
      d.inFlight--;
      d.record(failed, (performance.now() - startedAt) / 1000, false);
    }
  }

  private async callRouted<U, I, T>(model: CatalogEntry, route: Route<U>, op: Operation<U, I, T>, input: I, signal: AbortSignal, served?: ServedListener): Promise<T> {
    const { deployments } = route;
    const startedAt = Date.now();
    let triedSet: TriedSet = 0;
    let attempts = 0;
    let lastFailure: unknown = null;
    let attemptSignal = signal;
    for (;;) {
      const now = Date.now();
      const index = chooseDeployment(deployments, triedSet, now);
      if (index < 0) throw lastFailure ?? allDeploymentsOut(model.id, route.availableInMs(now));
      const d = deployments[index];
      triedSet = withTried(triedSet, index);
      attempts++;
      served?.describe(attempts === 1 ? d.servedFirst : { deployment: d.name, attempts });
      d.breaker.admit(now);
      d.inFlight++;
      const attemptStart = performance.now();
      try {
        const answer = await op.send(d, input, attemptSignal);
        d.breaker.succeeded(Date.now());
        d.record(false, (performance.now() - attemptStart) / 1000, attempts > 1);
        if (!op.holdUntilEnd) {
          d.inFlight--;
          return answer;
        }
        return op.holdUntilEnd(answer, () => d.inFlight--);
      } catch (err) {
        d.inFlight--;
        const seconds = (performance.now() - attemptStart) / 1000;
        if (signal.aborted) {
          // The client left: no verdict on the deployment, and no further attempt.
          d.breaker.abandoned();
          d.record(false, seconds, attempts > 1);
          throw err;
        }
        const failure = attemptSignal.aborted ? budgetSpent(model.id, route.budgetMs) : err;
        this.judge(d, failure, seconds, attempts > 1);
        logCredentialsRefused(this.logger, failure, served?.requestId);
        const elapsed = Date.now() - startedAt;
        if (!isRetryable(failure) || attempts > route.retries || elapsed >= route.budgetMs) throw failure;
        lastFailure = failure;
        attemptSignal = AbortSignal.any([signal, AbortSignal.timeout(route.budgetMs - elapsed)]);
      }
    }
  }

  /** A failed attempt's verdict on its deployment's circuit. */
  private judge(d: Deployment, failure: unknown, seconds: number, retry: boolean): void {
    const now = Date.now();
    if (!countsAgainstDeployment(failure)) {
      d.breaker.succeeded(now);
      d.record(false, seconds, retry);
      return;
    }
    d.breaker.failed(now);
    d.record(true, seconds, retry);
    const retryAfterS = failure instanceof UpstreamFailure ? failure.retryAfterS : null;
    if (retryAfterS !== null) d.breaker.openFor(Math.min(retryAfterS, 3600) * 1000, now);
  }

  /** GET /admin/v1/upstreams: each deployment as an operator reads it. */
  status() {
    const now = Date.now();
    return this.routes.all.flatMap((route) =>
      route.deployments.map((d) => {
        const recent = d.recent();
        const { model, name: deployment, priority, weight, inFlight: in_flight } = d;
        return { model, deployment, priority, weight, routed: !route.single, state: d.breaker.state(now), in_flight, recent_calls: recent.calls, error_rate: recent.errorRate, latency_ms: recent.latencyMs };
      }),
    );
  }

  private samples(): DeploymentSample[] {
    const now = Date.now();
    return this.deployments().map((d) => ({
      model: d.model,
      deployment: d.name,
      requests: d.requests,
      failures: d.failures,
      retries: d.retries,
      latencySeconds: d.latencySeconds,
      inFlight: d.inFlight,
      state: d.breaker.state(now),
    }));
  }
}
