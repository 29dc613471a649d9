import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { parse, stringify } from 'yaml';
import { AdminClient } from './admin-client';
import { classPriceFields } from './cost-oracle';
import { FAKE_OPENAI_KEY, FAKE_OPENAI_KEY_ENV, fakeOpenAiProvider, FakeUpstream, startFakeUpstream } from './fake-upstream';
import { GatewayProcess } from './fault-gateway';
import { BROKEN_MODEL, FAULT_MODEL, FaultModel } from './fault-models';
import { stopAllLoads } from './fault-requests';
import { OwnPostgres, startOwnPostgres } from './own-postgres';
import { OwnRedis, startOwnRedis } from './own-redis';
import { RawConfig, TEST_ADMIN_TOKEN } from './test-app';


export type SnapshotQuery = <R = Record<string, string>>(sql: string, params?: unknown[]) => Promise<R[]>;

export interface FaultClusterOptions {
  replicas: number;
  /** limits.chat_burst; very high unless a test is about the burst limit. */
  burst?: { requests: number; window_s: number };
  /** A second fake upstream behind BROKEN_MODEL. */
  badUpstream?: boolean;
  /** Extra `billing:` settings (the defaults are what is under test, so normally none). */
  billing?: Record<string, unknown>;
  /** Extra `idempotency:` settings. */
  idempotency?: Record<string, unknown>;
}

/**
 * Everything a fault test breaks, each its own: a PostgreSQL and a redis-server on free ports, fake
 * upstreams over real HTTP, and `replicas` gateway processes against them. `close()` ends all of it.
 */
export class FaultCluster {
  gateways: GatewayProcess[] = [];
  upstream!: FakeUpstream;
  badUpstream: FakeUpstream | null = null;
  pg!: OwnPostgres;
  redis!: OwnRedis;
  private readonly dir = mkdtempSync(join(tmpdir(), 'fault-cluster-'));
  private failed = false;

  get admin(): AdminClient {
    const live = this.gateways.find((g) => g.alive);
    if (!live) throw new Error('no live gateway for the admin API');
    return new AdminClient(live.url, TEST_ADMIN_TOKEN);
  }

  async start(options: FaultClusterOptions): Promise<this> {
    [this.pg, this.redis, this.upstream] = await Promise.all([startOwnPostgres(), startOwnRedis(), startFakeUpstream()]);
    if (options.badUpstream) this.badUpstream = await startFakeUpstream();
    const configPath = join(this.dir, 'gateway.yaml');
    writeFileSync(configPath, stringify(this.config(options)));
    const env = {
      DATABASE_URL: this.pg.url,
      REDIS_URL: this.redis.url,
      PORT: '0',
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
      GATEWAY_CONFIG: configPath,
      LOG_LEVEL: 'warn',
      [FAKE_OPENAI_KEY_ENV]: FAKE_OPENAI_KEY,
    };
    // The first replica applies the migrations; the others start once the schema is there.
    const names = Array.from({ length: options.replicas }, (_, i) => `replica-${i + 1}`);
    const replica = (name: string) => new GatewayProcess({ name, env, logFile: join(this.dir, `${name}.log`) });
    this.gateways = [replica(names[0])];
    await this.gateways[0].ready();
    this.gateways.push(...names.slice(1).map(replica));
    await Promise.all(this.gateways.map((g) => g.ready()));
    return this;
  }

  /** A query on a connection of its own (the database may have restarted since the last one). */
  async query<T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
    const client = new Client({ connectionString: this.pg.url, connectionTimeoutMillis: 3000 });
    client.on('error', () => undefined);
    await client.connect();
    try {
      return (await client.query(sql, params)).rows as T[];
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** Several statements in one REPEATABLE READ snapshot, so their figures are of the same instant. */
  async snapshot<T>(read: (q: SnapshotQuery) => Promise<T>): Promise<T> {
    const client = new Client({ connectionString: this.pg.url, connectionTimeoutMillis: 3000 });
    client.on('error', () => undefined);
    await client.connect();
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const result = await read(async <R>(sql: string, params: unknown[] = []) => (await client.query(sql, params)).rows as R[]);
      await client.query('COMMIT');
      return result;
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** Each replica's recent output, to explain a failure; its whole output stays in the cluster's folder. */
  explain(): string {
    this.failed = true;
    return `Full output of each replica: ${this.dir}/replica-*.log (kept after a failure)\n` + this.gateways
      .filter(Boolean)
      .map((g) => `----- ${g.name} (pid ${g.pid}, ${g.alive ? 'alive' : `exited ${JSON.stringify(g.exit)}`}) -----\n${g.tail(4000)}`)
      .join('\n');
  }

  async close(): Promise<void> {
    await stopAllLoads();
    await Promise.allSettled(this.gateways.filter(Boolean).map((g) => g.stop(3000)));
    await Promise.allSettled([this.upstream?.close(), this.badUpstream?.close(), this.redis?.stop(), this.pg?.destroy()]);
    if (!this.failed) rmSync(this.dir, { recursive: true, force: true });
  }

  private config(options: FaultClusterOptions): RawConfig {
    const raw: RawConfig = parse(readFileSync(resolve(__dirname, '../../config/gateway.yaml'), 'utf8'));
    const provider = (baseUrl: string) => fakeOpenAiProvider(baseUrl);
    const chatModel = (model: FaultModel, providerName: string) => ({
      id: model.id,
      kind: 'chat',
      provider: providerName,
      upstream_model: `upstream-${model.id}`,
      input_price_per_million: model.input,
      output_price_per_million: model.output,
      ...classPriceFields(model),
      max_output_tokens: model.maxOutput,
    });
    raw.providers.fake = provider(this.upstream.url);
    raw.catalog.push(chatModel(FAULT_MODEL, 'fake'));
    if (this.badUpstream) {
      raw.providers.bad = provider(this.badUpstream.url);
      raw.catalog.push(chatModel(BROKEN_MODEL, 'bad'));
    }
    raw.limits.chat_burst = options.burst ?? { requests: 100_000, window_s: 1 };
    if (options.billing) raw.billing = { ...(raw.billing ?? {}), ...options.billing };
    if (options.idempotency) raw.idempotency = { ...(raw.idempotency ?? {}), ...options.idempotency };
    return raw;
  }
}

export async function startFaultCluster(options: FaultClusterOptions): Promise<FaultCluster> {
  const cluster = new FaultCluster();
  try {
    return await cluster.start(options);
  } catch (err) {
    const logs = cluster.explain();
    await cluster.close();
    throw new Error(`${(err as Error).message}\n${logs}`);
  }
}

/**
 * Starts a cluster before a spec's tests (handing it to `started`) and closes it after them, printing
 * the timings the tests pushed under `title`. Returns those timings.
 */
export function useFaultCluster(options: FaultClusterOptions, title: string, started: (cluster: FaultCluster) => void): string[] {
  const timings: string[] = [];
  let cluster: FaultCluster | undefined;
  beforeAll(async () => {
    cluster = await startFaultCluster(options);
    started(cluster);
  }, 120_000);
  afterAll(async () => {
    if (timings.length) process.stdout.write(`\n${title}:\n${timings.join('\n')}\n`);
    await cluster?.close();
  });
  return timings;
}

/** A test body whose failure message ends with every replica's recent output. */
export function withReplicaLogs(cluster: () => FaultCluster | undefined, body: () => Promise<void>): () => Promise<void> {
  return async () => {
    try {
      await body();
    } catch (err) {
      await stopAllLoads();
      const logs = cluster()?.explain();
      if (err instanceof Error && logs) err.message += `\n\nReplica output:\n${logs}`;
      throw err;
    }
  };
}
