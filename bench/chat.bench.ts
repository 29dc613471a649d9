/**
 * Chat benchmark: the fake upstream directly, a minimal pass-through proxy, the framework's floor (NestJS on
 * Fastify with a guard and an interceptor, relabelling the model: bench/nest-floor.ts), and the gateway
 * (billing and metering on), for non-streaming and streaming chat, in one run on this machine. Usage: `npm run bench`
 * (BENCH_DURATION_S, BENCH_CONNECTIONS, BENCH_STREAMS, BENCH_ACCOUNTS, BENCH_ONLY, BENCH_SEQUENTIAL,
 * BENCH_UNLOADED_BLOCKS, BENCH_RATE, BENCH_PORTKEY, BENCH_BASELINE, BENCH_GATEWAY_NODE_ARGS, DATABASE_URL and REDIS_URL are read from
 * the environment). BENCH_BASELINE names another checkout of this project (a git worktree with its
 * node_modules): its gateway runs beside this one as the target "baseline gateway", for A/B comparisons
 * within one run. BENCH_DEPLOYMENTS=2 adds the model `bench-routed`, served by two deployments (the bench
 * upstream and a second one failing BENCH_FLAKY_RATIO, default 20%, of its requests with a 500), and
 * compares it with the single-deployment `bench-model` on the gateway: throughput and added latency.
 * Results: docs/performance.md.
 */
import autocannon from 'autocannon';
import { ChildProcess, execSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Client } from 'pg';
import { Agent, request } from 'undici';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const STREAMS = Number(process.env.BENCH_STREAMS ?? 1000);
const ACCOUNTS = Number(process.env.BENCH_ACCOUNTS ?? 50);
/** Sequential requests per target for the unloaded latency, taken in blocks that alternate the targets. */
const SEQUENTIAL = Number(process.env.BENCH_SEQUENTIAL ?? 300);
const UNLOADED_BLOCKS = Number(process.env.BENCH_UNLOADED_BLOCKS ?? 3);
const BASELINE = process.env.BENCH_BASELINE;
const DEPLOYMENTS = Number(process.env.BENCH_DEPLOYMENTS ?? 1);
const FLAKY_RATIO = process.env.BENCH_FLAKY_RATIO ?? '0.2';
const WARM_UP_REQUESTS = 20;
const WARM_UP_S = 2;
/** Only the rows whose "mode | target" matches this pattern run (e.g. "json \\| gateway$"). */
const ONLY = new RegExp(process.env.BENCH_ONLY ?? '.');
/** Loaded runs per target, taken in turn (A, B, A, B…) and reported by their median: an A/B that a drift of the VM's speed touches alike. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
/** Requests per second offered to each target in the loaded runs (autocannon's overallRate); unset: as many as it serves. */
const RATE = Number(process.env.BENCH_RATE ?? 0);
/** A folder where `@portkey-ai/gateway` is installed (npm install in a git-ignored folder): Portkey's gateway runs as the target "portkey". */
const PORTKEY = process.env.BENCH_PORTKEY;
const CLOCK_TICKS_PER_S = 100;
const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';
const ROOT = join(__dirname, '..');
const GATEWAY_CONFIG_PATH = join(tmpdir(), `bench-gateway-${process.pid}.yaml`);
const children: ChildProcess[] = [];
let database: { url: string | undefined; drop(): Promise<void> } | undefined;

interface Target {
  name: string;
  url: string;
  headers: Record<string, string>;
  /** Authorization headers that each connection cycles through (requests of several accounts). */
  rotation?: Record<string, string>[];
  /** The target's process, for its CPU use. */
  pid?: number;
  /** Measured for JSON answers only (Portkey's Node build fails every stream from an OpenAI-compatible host). */
  jsonOnly?: boolean;
}

function startChild(command: string, args: string[], env: NodeJS.ProcessEnv, ready: RegExp, cwd = ROOT): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      if (ready.test(line)) resolve({ child, line });
    });
    child.once('exit', (code) => reject(new Error(`${command} ${args.join(' ')} exited with ${code}`)));
  });
}

const tsNode = (file: string, ...args: string[]): [string, string[]] => ['node', ['-r', 'ts-node/register/transpile-only', join(ROOT, 'bench', file), ...args]];

function body(stream: boolean, model: string): string {
  return JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'Say something short about benchmarks.' }], ...(stream ? { stream_options: { include_usage: true } } : {}) });
}

function load(target: Target, stream: boolean, model: string, duration: number) {
  return autocannon({
    url: `${target.url}/chat/completions`,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...target.headers },
    body: body(stream, model),
    connections: CONNECTIONS,
    duration,
    ...(RATE ? { overallRate: RATE } : {}),
    ...(target.rotation ? { requests: target.rotation.map((headers) => ({ headers: { 'content-type': 'application/json', ...headers } })) } : {}),
  });
}

type Load = Awaited<ReturnType<typeof throughput>>;

/** The run with the median CPU per request (its other figures with it). */
function median(loads: Load[]): Load {
  const sorted = [...loads].sort((a, b) => Number(a.cpuUs) - Number(b.cpuUs) || a.rps - b.rps);
  return sorted[Math.floor(sorted.length / 2)];
}

async function throughput(target: Target, stream: boolean, model: string) {
  // Unmeasured first: every target runs with its code optimised by the JIT and its pools filled.
  await load(target, stream, model, WARM_UP_S);
  const targetCpuBefore = cpuSeconds(target.pid ? [target.pid] : []);
  const postgresBefore = new Map(postgresPids().map((pid) => [pid, cpuSeconds([pid])]));
  const result = await load(target, stream, model, DURATION_S);
  const requests = result.requests.total || 1;
  const process = cpuSeconds(target.pid ? [target.pid] : []) - targetCpuBefore;
  // Backends that started during the run count whole.
  const database = postgresPids().reduce((sum, pid) => sum + cpuSeconds([pid]) - (postgresBefore.get(pid) ?? 0), 0);
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
    // CPU per request in microseconds: the target's own process and the PostgreSQL server.
    cpuUs: target.pid ? ((process * 1e6) / requests).toFixed(0) : '',
    dbCpuUs: ((database * 1e6) / requests).toFixed(0),
    // Resident memory of the target's process once the load is over (the target "RSS after load").
    rssMb: target.pid ? rssMb(target.pid).toFixed(0) : '',
  };
}

/** The time of one request: the whole answer (JSON) or its first SSE event (streams). */
async function timeOne(target: Target, stream: boolean, model: string, dispatcher: Agent): Promise<number> {
  const start = process.hrtime.bigint();
  const answer = await request(`${target.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...target.headers },
    body: body(stream, model),
    dispatcher,
  });
  let elapsed = 0;
  for await (const part of answer.body) {
    if (stream && elapsed === 0 && String(part).includes('data:')) elapsed = Number(process.hrtime.bigint() - start) / 1e6;
  }
  if (!stream) elapsed = Number(process.hrtime.bigint() - start) / 1e6;
  if (answer.statusCode !== 200) throw new Error(`${target.name}: HTTP ${answer.statusCode}`);
  return elapsed;
}

/**
 * Median unloaded latency of each target: sequential requests on one keep-alive connection, in blocks
 * that take the targets in turn, so that a drift of the machine's speed during the run (an idle VM's
 * timings move by milliseconds between minutes) touches every target alike.
 */
async function unloaded(targets: Target[], stream: boolean, model: string): Promise<number[]> {
  const dispatchers = targets.map(() => new Agent({ connections: 1 }));
  const samples: number[][] = targets.map(() => []);
  for (let block = 0; block < UNLOADED_BLOCKS; block++) {
    for (let t = 0; t < targets.length; t++) {
      for (let i = 0; i < WARM_UP_REQUESTS + SEQUENTIAL / UNLOADED_BLOCKS; i++) {
        const elapsed = await timeOne(targets[t], stream, model, dispatchers[t]);
        if (i >= WARM_UP_REQUESTS) samples[t].push(elapsed);
      }
    }
  }
  await Promise.all(dispatchers.map((d) => d.close()));
  return samples.map((s) => s.sort((a, b) => a - b)[Math.floor(s.length / 2)]);
}

/** CPU seconds used so far by the processes with these pids. */
function cpuSeconds(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // exited meanwhile
    }
  }
  return ticks / CLOCK_TICKS_PER_S;
}

/** Pids of the local PostgreSQL server's processes (its backends do the billing work). */
function postgresPids(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres';
      } catch {
        return false;
      }
    });
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

/** STREAMS concurrent slow streams through the gateway: errors and resident memory growth. */
async function manyStreams(gateway: Target, pid: number) {
  const dispatcher = new Agent({ connections: STREAMS + 10, pipelining: 0 });
  const before = rssMb(pid);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 200);
  let errors = 0;
  let completed = 0;
  await Promise.all(
    Array.from({ length: STREAMS }, async () => {
      try {
        const answer = await request(`${gateway.url}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...gateway.headers },
          body: body(true, 'bench-slow'),
          dispatcher,
          bodyTimeout: 60_000,
          headersTimeout: 60_000,
        });
        let text = '';
        for await (const part of answer.body) text += String(part);
        if (answer.statusCode === 200 && text.includes('[DONE]')) completed++;
        else errors++;
      } catch {
        errors++;
      }
    }),
  );
  clearInterval(sampler);
  await dispatcher.close();
  return { completed, errors, before, peak, growth: peak - before };
}

/** With DATABASE_URL set, the gateway gets a database of its own on that server, dropped afterwards. */
async function benchDatabase(): Promise<{ url: string | undefined; drop(): Promise<void> }> {
  const server = process.env.DATABASE_URL;
  if (!server) return { url: undefined, drop: async () => undefined };
  const name = `gateway_bench_${process.pid}`;
  const admin = new Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(server);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new Client({ connectionString: server });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await client.end();
    },
  };
}

async function gatewayTarget(upstreamUrl: string, databaseUrl: string | undefined, root = ROOT, name = 'gateway', flakyUrl?: string): Promise<{ targets: Target[]; pid: number }> {
  const configPath = GATEWAY_CONFIG_PATH;
  const models = ['bench-model', 'bench-slow']
    .map((id) => `  - { id: ${id}, kind: chat, provider: bench, upstream_model: ${id}, input_price_per_million: 0.15, output_price_per_million: 0.6, max_output_tokens: 1000 }`)
    .join('\n');
  const provider = (id: string, base: string) => `  ${id}: { type: openai-compatible, base_url: "${base}/v1", timeouts: { connect_ms: 2000, request_ms: 60000 }, max_connections: 2048 }\n`;
  const routed = flakyUrl
    ? `\n  - { id: bench-routed, kind: chat, deployments: [{ provider: bench, upstream_model: bench-model }, { provider: bench-flaky, upstream_model: bench-model }], input_price_per_million: 0.15, output_price_per_million: 0.6, max_output_tokens: 1000 }`
    : '';
  writeFileSync(
    configPath,
    `providers:\n${provider('bench', upstreamUrl)}${flakyUrl ? provider('bench-flaky', flakyUrl) : ''}` +
      `catalog:\n${models}${routed}\nlimits:\n  chat_burst: { requests: 100000000, window_s: 1 }\n`,
  );
  const port = 18000 + (process.pid % 1000) + (root === ROOT ? 0 : 1);
  // Started as `npm start` starts it (its node flags included), after any extra flags of the run.
  // `npm start`'s command without its shell's `exec` (which lets npm's signals reach node).
  const start = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start.replace(/^exec /, '').split(' ');
  const { child } = await startChild(start[0], [...(process.env.BENCH_GATEWAY_NODE_ARGS ?? '').split(' ').filter(Boolean), ...start.slice(1)], { PORT: String(port), GATEWAY_CONFIG: configPath, ADMIN_TOKEN, LOG_LEVEL: process.env.LOG_LEVEL ?? 'info', ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) }, /Gateway listening/, root);
  const url = `http://127.0.0.1:${port}`;
  const admin = async (path: string, payload: unknown) => {
    const answer = await request(`${url}/admin/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(payload),
    });
    return (await answer.body.json()) as { id: string; key: string };
  };
  const keys: string[] = [];
  for (let i = 0; i < ACCOUNTS; i++) {
    const account = await admin('/accounts', { name: `bench-${i}` });
    await admin(`/accounts/${account.id}/credits`, { amount_usd: '1000000' });
    keys.push((await admin(`/accounts/${account.id}/keys`, { name: 'bench' })).key);
  }
  const one: Target = { name, url: `${url}/v1`, headers: { authorization: `Bearer ${keys[0]}` }, pid: child.pid };
  const many: Target = { ...one, name: `${name}, ${ACCOUNTS} accounts`, rotation: keys.map((key) => ({ authorization: `Bearer ${key}` })) };
  return { targets: [one, many], pid: child.pid! };
}

/** Portkey's open-source gateway (Node build, headless) in front of the same upstream, as an OpenAI provider with a custom host. */
async function portkeyTarget(upstreamUrl: string, folder: string): Promise<Target> {
  const port = 19000 + (process.pid % 1000);
  const script = join(folder, 'node_modules/@portkey-ai/gateway/build/start-server.js');
  const { child } = await startChild('node', [script, `--port=${port}`, '--headless'], { NODE_ENV: 'production' }, /Ready for connections/, folder);
  const headers = { authorization: 'Bearer sk-bench', 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `${upstreamUrl}/v1` };
  // Its streams fail with "TypeError: immutable": it appends its headers to the upstream's own fetch Response.
  return { name: 'portkey', url: `http://127.0.0.1:${port}/v1`, headers, pid: child.pid, jsonOnly: true };
}

async function main(): Promise<void> {
  for (const root of [ROOT, ...(BASELINE ? [BASELINE] : [])]) execSync('npm run build', { cwd: root, stdio: 'ignore' });
  database = await benchDatabase();
  const upstream = await startChild(...tsNode('bench-upstream.ts'), {}, /^\d+$/);
  const upstreamUrl = `http://127.0.0.1:${upstream.line.trim()}`;
  const proxy = await startChild(...tsNode('minimal-proxy.ts', upstreamUrl), {}, /^\d+$/);
  const floor = await startChild(...tsNode('nest-floor.ts', upstreamUrl), {}, /^\d+$/);
  const flaky = DEPLOYMENTS === 2 ? await startChild(...tsNode('bench-upstream.ts'), { BENCH_FAIL_RATIO: FLAKY_RATIO }, /^\d+$/) : undefined;
  const gateway = await gatewayTarget(upstreamUrl, database.url, ROOT, 'gateway', flaky && `http://127.0.0.1:${flaky.line.trim()}`);
  const baseline = BASELINE ? await gatewayTarget(upstreamUrl, database.url, BASELINE, 'baseline gateway') : undefined;
  const portkey = PORTKEY ? await portkeyTarget(upstreamUrl, PORTKEY) : undefined;
  const targets: Target[] = [
    { name: 'direct (fake upstream)', url: `${upstreamUrl}/v1`, headers: {}, pid: upstream.child.pid },
    { name: 'minimal proxy', url: `http://127.0.0.1:${proxy.line.trim()}/v1`, headers: {}, pid: proxy.child.pid },
    { name: 'nest floor', url: `http://127.0.0.1:${floor.line.trim()}/v1`, headers: { authorization: 'Bearer bench' }, pid: floor.child.pid },
    ...gateway.targets,
    ...(baseline?.targets ?? []),
    ...(portkey ? [portkey] : []),
  ];

  const rows: string[] = [];
  for (const stream of [false, true]) {
    const selected = targets.filter((target) => ONLY.test(`${stream ? 'stream' : 'json'} | ${target.name}`) && !(stream && target.jsonOnly));
    // Unloaded latency does not depend on how many accounts send requests.
    const single = selected.filter((target) => !target.rotation);
    const idleTimes = await unloaded(single, stream, 'bench-model');
    const loads: Load[][] = selected.map(() => []);
    for (let round = 0; round < ROUNDS; round++) {
      for (let t = 0; t < selected.length; t++) loads[t].push(await throughput(selected[t], stream, 'bench-model'));
    }
    for (let t = 0; t < selected.length; t++) {
      const target = selected[t];
      const idle = target.rotation ? NaN : idleTimes[single.indexOf(target)];
      const load = median(loads[t]);
      rows.push(
        `| ${stream ? 'stream' : 'json'} | ${target.name} | ${load.rps.toFixed(0)} | ${load.p50} | ${load.p99} | ${load.errors} | ${Number.isNaN(idle) ? '' : idle.toFixed(3)} | ${load.cpuUs} | ${load.dbCpuUs} | ${load.rssMb} |`,
      );
      process.stdout.write(`${rows[rows.length - 1]}\n`);
    }
  }
  process.stdout.write(
    `\n| mode | target | req/s | p50 ms | p99 ms | errors | unloaded ms (json: full answer, stream: first event) | CPU µs/request | PostgreSQL CPU µs/request | RSS MB after load |\n` +
      `|---|---|---|---|---|---|---|---|---|---|\n${rows.join('\n')}\n\n`,
  );
  if (flaky) await compareRouted(gateway.targets[0]);
  if (STREAMS > 0) {
    const streams = await manyStreams(gateway.targets[0], gateway.pid);
    process.stdout.write(
      `${STREAMS} concurrent streams through the gateway: ${streams.completed} completed, ${streams.errors} errors, ` +
        `RSS ${streams.before.toFixed(0)} MB before, ${streams.peak.toFixed(0)} MB peak (+${streams.growth.toFixed(0)} MB)\n`,
    );
  }
}

/** BENCH_DEPLOYMENTS=2: the same gateway, one model with one deployment and one with two (one of them flaky). */
async function compareRouted(gateway: Target): Promise<void> {
  const rows: string[] = [];
  for (const stream of [false, true]) {
    const [single] = await unloaded([gateway], stream, 'bench-model');
    const [routed] = await unloaded([gateway], stream, 'bench-routed');
    for (const [model, idle] of [['bench-model', single], ['bench-routed', routed]] as const) {
      const load = await throughput(gateway, stream, model);
      const added = model === 'bench-routed' ? `${(routed - single).toFixed(3)}` : '';
      rows.push(`| ${stream ? 'stream' : 'json'} | ${model} | ${load.rps.toFixed(0)} | ${load.p50} | ${load.p99} | ${load.errors} | ${idle.toFixed(3)} | ${added} | ${load.cpuUs} |`);
      process.stdout.write(`${rows[rows.length - 1]}\n`);
    }
  }
  process.stdout.write(
    `\nTwo deployments, one failing ${Number(FLAKY_RATIO) * 100}% of its requests (retried on the other before the first byte):\n` +
      `| mode | model | req/s | p50 ms | p99 ms | errors | unloaded ms | added ms | CPU µs/request |\n|---|---|---|---|---|---|---|---|---|\n${rows.join('\n')}\n\n`,
  );
}

main()
  .catch((err: Error) => {
    process.stderr.write(`${err.stack}\n`);
    process.exitCode = 1;
  })
  .finally(async () => {
    const exits = children.map((c) => new Promise((resolve) => (c.exitCode === null ? c.once('exit', resolve) : resolve(null))));
    children.forEach((c) => c.kill('SIGTERM'));
    await Promise.all(exits);
    await database?.drop();
    rmSync(GATEWAY_CONFIG_PATH, { force: true });
  });
