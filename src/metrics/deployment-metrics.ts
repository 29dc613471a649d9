import { Counter, Gauge, Registry } from 'prom-client';

/** One deployment's figures on this replica, as the router keeps them (src/routing/). */
export interface DeploymentSample {
  model: string;
  deployment: string;
  requests: number;
  failures: number;
  retries: number;
  latencySeconds: number;
  inFlight: number;
  state: 'closed' | 'open' | 'half-open';
}

const CIRCUIT_STATES: Record<DeploymentSample['state'], number> = { closed: 0, 'half-open': 1, open: 2 };

/**
 * The per-deployment metrics, read from the router's counters at scrape time, so that the request path
 * only adds to plain numbers. Labels: the catalog model and the deployment (`provider/upstream_model`),
 * both from the configuration.
 */
export function registerDeploymentMetrics(registry: Registry, read: () => DeploymentSample[]): void {
  const labelNames = ['model', 'deployment'] as const;
  const counter = (name: string, help: string, value: (s: DeploymentSample) => number) =>
    new Counter({ name, help, labelNames, registers: [registry], collect() { this.reset(); for (const s of read()) this.inc(labelsOf(s), value(s)); } });
  const gauge = (name: string, help: string, value: (s: DeploymentSample) => number) =>
    new Gauge({ name, help, labelNames, registers: [registry], collect() { this.reset(); for (const s of read()) this.set(labelsOf(s), value(s)); } });
  counter('gateway_deployment_requests_total', 'Upstream attempts by deployment (a retried request counts once per attempt).', (s) => s.requests);
  counter('gateway_deployment_failures_total', 'Attempts that failed on the deployment (connection, timeout, 429, 5xx, malformed answer).', (s) => s.failures);
  counter('gateway_deployment_retries_total', 'Attempts that retried, on this deployment, a request failed on another.', (s) => s.retries);
  counter('gateway_deployment_latency_seconds_total', 'Sum of attempt latencies (to the answer, or to a stream\'s headers); divide by requests for the mean.', (s) => s.latencySeconds);
  gauge('gateway_deployment_in_flight', 'Requests in flight to the deployment from this replica.', (s) => s.inFlight);
  gauge('gateway_deployment_circuit_state', 'The deployment\'s circuit on this replica: 0 closed, 1 half-open, 2 open.', (s) => CIRCUIT_STATES[s.state]);
}

function labelsOf(s: DeploymentSample): { model: string; deployment: string } {
  return { model: s.model, deployment: s.deployment };
}
