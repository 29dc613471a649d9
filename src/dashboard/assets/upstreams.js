// The Upstreams panel (this replica's deployments, from GET /admin/v1/upstreams) and the report's
// per-deployment breakdown of the account's requests.
import { $, fillTable, integer, percent } from './dom.js';

/** `upstreams`: the answer of GET /admin/v1/upstreams. */
export function renderUpstreams({ data }) {
  fillTable(
    $('upstreams'),
    data,
    (d) => [
      { text: d.model, col: 'model' },
      { text: d.deployment, col: 'deployment', title: d.routed ? `priority ${d.priority}, weight ${d.weight}` : 'single upstream: no retries, no circuit' },
      { text: d.state, col: 'state' },
      { text: integer.format(d.in_flight), col: 'in_flight', num: true },
      { text: d.error_rate === null ? '—' : percent(d.error_rate), col: 'error_rate', num: true },
      { text: d.latency_ms === null ? '—' : `${integer.format(d.latency_ms)} ms`, col: 'latency_ms', num: true },
    ],
    (d) => ({ model: d.model, deployment: d.deployment, state: d.state }),
    (d) => (d.state === 'closed' ? '' : `circuit-${d.state}`),
  );
}

export function renderByDeployment(byDeployment) {
  fillTable(
    $('by-deployment'),
    byDeployment,
    (d) => [
      { text: d.model, col: 'model' },
      { text: d.deployment === null ? '(no upstream call)' : d.deployment, col: 'deployment' },
      { text: integer.format(d.requests), col: 'requests', num: true },
      { text: integer.format(d.failed), col: 'failed', num: true },
      { text: integer.format(d.retried), col: 'retried', num: true },
      { text: d.cost_usd, col: 'cost_usd', num: true },
    ],
    (d) => ({ model: d.model, deployment: d.deployment ?? '' }),
  );
}
