import { DataSource } from 'typeorm';
import { AdminClient } from './admin-client';
import { moneyOf } from './chat-support';
import { RawConfig, startTestApp, TestApp } from './test-app';

/**
 * The e2e set-up of a spec that runs the gateway against fake upstreams (anthropic-upstream, gemini-upstream,
 * bedrock-upstream, azure-openai-upstream, mixed-deployments…): the fakes started, the gateway configured with them
 * (a provider per fake, catalog entries that name them; chat's burst limit out of the way), an admin client and the
 * database; every fake reset before each test; all closed after. And the charge check those specs share.
 */

/** What the hooks of `useUpstreamGateway` need of a fake: each fake server of test/support is one. */
export interface ResettableFake {
  resetState(): void;
  close(): Promise<void>;
}

export interface UpstreamGateway<F> {
  fakes: F;
  gw: TestApp;
  admin: AdminClient;
  db: DataSource;
}

export interface UpstreamGatewayOptions<F extends Record<string, ResettableFake>> {
  /** Starts the spec's fakes, by name. */
  fakes: () => Promise<F>;
  /** Adds the providers (a config per fake) and the catalog entries to the gateway's config. */
  config: (fakes: F, raw: RawConfig) => void;
  /** Hands the started suite to the spec's own variables (`({ fake, gw, admin, db } = …)`), once it runs. */
  ready?: (suite: UpstreamGateway<F>) => void;
}

/** Registers the beforeAll / beforeEach / afterAll of a describe block that runs the gateway against fake upstreams. */
export function useUpstreamGateway<F extends Record<string, ResettableFake>>(options: UpstreamGatewayOptions<F>): UpstreamGateway<F> {
  const suite = {} as UpstreamGateway<F>;
  beforeAll(async () => {
    suite.fakes = await options.fakes();
    suite.gw = await startTestApp({
      config: (raw: RawConfig) => {
        options.config(suite.fakes, raw);
        raw.limits.chat_burst = { requests: 100_000, window_s: 1 };
      },
    });
    suite.admin = new AdminClient(suite.gw.url);
    suite.db = suite.gw.app.get(DataSource);
    options.ready?.(suite);
  });
  afterAll(async () => {
    await suite.gw?.close();
    await Promise.all(Object.values(suite.fakes ?? {}).map((fake) => fake.close()));
  });
  beforeEach(() => {
    for (const fake of Object.values(suite.fakes)) fake.resetState();
  });
  return suite;
}

/** A model's deployments in the order they are tried: each `[provider, upstream model]`, priority 0 first. */
export function deploymentsInOrder(...served: [provider: string, upstreamModel: string][]): Record<string, unknown>[] {
  return served.map(([provider, upstream_model], priority) => ({ provider, upstream_model, priority }));
}

/** A provider config of `type` at `baseUrl` whose key the gateway reads from `keyEnv`, set here to `key`. */
export function keyedProvider(type: string, baseUrl: string, keyEnv: string, key: string): Record<string, unknown> {
  process.env[keyEnv] = key;
  return { type, base_url: baseUrl, api_key_env: keyEnv, timeouts: UPSTREAM_TIMEOUTS };
}

/** A provider's timeouts in these specs: a refused connection is known in a second, an answer may take ten. */
export const UPSTREAM_TIMEOUTS = { connect_ms: 1000, request_ms: 10_000 };

/**
 * The account was charged `expected` µUSD, exactly once, from `startMicros`: one charge of that amount, the balance
 * less it, the ledger summing to the balance, nothing still reserved. Returns `expected`.
 */
export async function expectChargedExactly(db: DataSource, accountId: string, expected: bigint, startMicros = 10_000_000n): Promise<bigint> {
  const money = await moneyOf(db, accountId);
  expect(money.charges.map((c) => c.amount)).toEqual([expected]);
  expect(money.balance).toBe(startMicros - expected);
  expect(money.ledgerSum).toBe(money.balance);
  expect(money.reserved).toBe(0n);
  return expected;
}
