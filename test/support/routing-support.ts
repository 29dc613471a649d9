import { DataSource } from 'typeorm';
import { AdminClient } from './admin-client';
import { classPriceFields, PricedModel, withFakeProvider } from './chat-support';
import { FakeUpstream, startFakeUpstream, unusedPortUrl } from './fake-upstream';
import { RawConfig, startTestApp, TestApp } from './test-app';

/** One deployment of a routed test model: which fake (or the refused address) and its upstream model name. */
export interface TestDeployment {
  upstream: 'a' | 'b' | 'refused';
  model: string;
  weight?: number;
  priority?: number;
}

export interface RoutedModel extends PricedModel {
  deployments: TestDeployment[];
  retries?: number;
  failure_threshold?: number;
  cooldown_s?: number;
}

export interface RoutingSuite {
  a: FakeUpstream;
  b: FakeUpstream;
  gw: TestApp;
  admin: AdminClient;
  db: DataSource;
}

const REQUEST_MS = 800;

/** Providers `a` and `b` (two fake upstreams) and `refused` (nothing listens), serving `models` through deployments. */
export function useRoutingGateway(models: RoutedModel[], extra: (raw: RawConfig) => void = () => undefined): RoutingSuite {
  const suite = {} as RoutingSuite;
  beforeAll(async () => {
    suite.a = await startFakeUpstream();
    suite.b = await startFakeUpstream();
    const refused = await unusedPortUrl();
    suite.gw = await startTestApp({
      config: (raw) => {
        for (const [name, url] of [['a', suite.a.url], ['b', suite.b.url], ['refused', refused]]) {
          withFakeProvider(url, [], { name, connectMs: 500, requestMs: REQUEST_MS })(raw);
        }
        for (const m of models) {
          raw.catalog.push({
            id: m.id,
            kind: 'chat',
            deployments: m.deployments.map((d) => ({ provider: d.upstream, upstream_model: d.model, weight: d.weight, priority: d.priority })),
            retries: m.retries,
            failure_threshold: m.failure_threshold,
            cooldown_s: m.cooldown_s,
            input_price_per_million: m.input,
            output_price_per_million: m.output,
            ...classPriceFields(m),
            max_output_tokens: m.maxOutput,
          });
        }
        extra(raw);
      },
    });
    suite.admin = new AdminClient(suite.gw.url);
    suite.db = suite.gw.app.get(DataSource);
  });
  beforeEach(() => {
    suite.a?.resetState();
    suite.b?.resetState();
  });
  afterAll(async () => {
    await suite.gw?.close();
    await suite.a?.close();
    await suite.b?.close();
  });
  return suite;
}

/** Requests a fake received for one upstream model. */
export function callsTo(fake: FakeUpstream, upstreamModel: string): number {
  return fake.requests.filter((r) => r.body?.model === upstreamModel).length;
}

export async function deploymentColumns(db: DataSource, accountId: string): Promise<{ deployment: string | null; attempts: number | null; cost_micros: string; status: number }[]> {
  return db.query(`SELECT deployment, attempts, cost_micros, status FROM usage_records WHERE account_id = $1 ORDER BY id`, [accountId]);
}
