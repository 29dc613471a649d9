import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { Client } from 'pg';
import { freePort } from './support/free-port';
import { GatewayMain } from './support/gateway-main';

jest.setTimeout(240_000);

/** Failures are meant to end a start within this long of reaching the step that fails (plus the process's own start). */
const EMBEDDED_FAILURE_BOUND_MS = 20_000;
const DATABASE_WAIT_MS = 10_000;

/** A listener of the test's own on `port`: on 127.0.0.1 (the embedded PostgreSQL's address), or on every address (the gateway's). */
function listenOn(port: number, host: string | undefined = '127.0.0.1'): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer((socket) => socket.destroy());
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

/** Epoch ms of the first JSON log line whose message matches `pattern` (the start of the step under test). */
function loggedAt(gw: GatewayMain, pattern: RegExp): number {
  const line = gw.jsonLines().find((l) => pattern.test(String(l.msg)));
  if (!line) throw new Error(`no log line ${pattern}\nstdout:\n${gw.stdout}\nstderr:\n${gw.stderr}`);
  return line.time as number;
}

/** stdout's log lines at warn or above: pino's JSON (level 40 and up) or pino-pretty's (WARN, ERROR, FATAL). */
function warningsIn(stdout: string): string[] {
  return stdout.split('\n').filter((line) => {
    if (line.startsWith('{')) return Number((JSON.parse(line) as { level?: number }).level) >= 40;
    return /^\[[^\]]*\] (WARN|ERROR|FATAL)\b/.test(stripVTControlCharacters(line));
  });
}

/** Exit code 1, one message on stderr naming the cause, nothing else there or at warn and above on stdout, and no stack trace. */
async function expectFailedStart(gw: GatewayMain, ...patterns: RegExp[]): Promise<void> {
  expect(await gw.exited).toBe(1);
  const message = gw.stderr;
  expect(message).toMatch(/^Gateway failed to start: [^\n]+\n$/);
  for (const pattern of patterns) expect(message).toMatch(pattern);
  expect(message).not.toMatch(/\n\s+at |TypeError|undefined/);
  expect(gw.stdout).not.toMatch(/Gateway listening/);
  expect(warningsIn(gw.stdout)).toEqual([]);
}

/** Runs `statements` one after the other as the server's administrator, on the database of `url`. */
async function sql(url: URL, ...statements: string[]): Promise<void> {
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  try {
    for (const statement of statements) await client.query(statement);
  } finally {
    await client.end();
  }
}

function postgresPids(dataDir: string): string[] {
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return out.split('\n').filter((line) => line.includes(`-D ${dataDir} `)).map((line) => line.trim().split(' ')[0]);
}

describe('A start that cannot succeed ends with one message naming what to change', () => {
  // Traversable by the `postgres` user the embedded PostgreSQL runs as under root.
  const dir = mkdtempSync(join(tmpdir(), 'gateway-fail-'));
  chmodSync(dir, 0o755);
  const running: GatewayMain[] = [];
  const servers: Server[] = [];
  const cleanups: Array<() => Promise<void>> = [];

  afterAll(async () => {
    for (const gw of running) gw.stop();
    await Promise.all(running.map((gw) => gw.exited));
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    for (const cleanup of cleanups) await cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  function start(env: Record<string, string>): GatewayMain {
    const gw = new GatewayMain({ LOG_LEVEL: 'debug', LOG_FORMAT: 'json', ...env });
    running.push(gw);
    return gw;
  }

  it('EMBEDDED_PG_PORT taken by another program: says so, suggests a free port, starts nothing', async () => {
    const port = await freePort();
    servers.push(await listenOn(port));
    const dataDir = join(dir, 'port-taken');
    const gw = start({ EMBEDDED_PG_DIR: dataDir, EMBEDDED_PG_PORT: String(port) });

    await expectFailedStart(gw, new RegExp(`Port ${port} \\(EMBEDDED_PG_PORT\\) is already in use by another program`), /e\.g\. EMBEDDED_PG_PORT=\d+ npm start/);
    const [, suggested] = /EMBEDDED_PG_PORT=(\d+) npm start/.exec(gw.stderr)!;
    expect(Number(suggested)).not.toBe(port);
    expect(gw.exitedAt! - loggedAt(gw, /starting embedded PostgreSQL/)).toBeLessThan(EMBEDDED_FAILURE_BOUND_MS);
    expect(existsSync(join(dataDir, 'postmaster.pid'))).toBe(false);
    expect(postgresPids(dataDir)).toEqual([]);
  });

  it('the default port 54329 taken (EMBEDDED_PG_PORT unset): names the default and how to pick another', async () => {
    // Held by whoever has it already (another gateway, say), or by this test.
    const held = await listenOn(54329).catch(() => null);
    if (held) servers.push(held);
    const gw = start({ EMBEDDED_PG_DIR: join(dir, 'default-port') });

    await expectFailedStart(
      gw,
      /Port 54329, the embedded PostgreSQL's default, is already in use/,
      /Pick a free port with EMBEDDED_PG_PORT, e\.g\. EMBEDDED_PG_PORT=\d+ npm start/,
    );
    if (held) await new Promise((r) => held.close(r));
  });

  it('a second gateway on the same EMBEDDED_PG_DIR while the first runs: names the directory and the PostgreSQL holding it; the first goes on', async () => {
    const dataDir = join(dir, 'shared');
    const port = String(await freePort());
    const first = start({ EMBEDDED_PG_DIR: dataDir, EMBEDDED_PG_PORT: port });
    const base = await first.started();
    const holder = readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0];

    // What a second `npm start` in the same checkout does: same directory, same port.
    const second = start({ EMBEDDED_PG_DIR: dataDir, EMBEDDED_PG_PORT: port });
    await expectFailedStart(
      second,
      new RegExp(`EMBEDDED_PG_DIR ${dataDir} is in use by another running PostgreSQL \\(PID ${holder}\\)`),
      /EMBEDDED_PG_DIR=\S+ EMBEDDED_PG_PORT=\d+ npm start/,
    );
    expect(second.exitedAt! - loggedAt(second, /starting embedded PostgreSQL/)).toBeLessThan(EMBEDDED_FAILURE_BOUND_MS);

    // The failed start left the first gateway's database alone.
    expect((await fetch(`${base.replace(/\/v1$/, '')}/readyz`)).status).toBe(200);
    expect(postgresPids(dataDir)).toContain(holder);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(postgresPids(dataDir)).toEqual([]);
  });

  const asRoot = process.getuid?.() === 0 ? it : it.skip;
  asRoot('an EMBEDDED_PG_DIR owned by another user: names the owner, the user PostgreSQL runs as, and both ways out', async () => {
    const dataDir = join(dir, 'foreign');
    mkdirSync(dataDir);
    writeFileSync(join(dataDir, 'PG_VERSION'), '17\n');
    chownSync(dataDir, 4321, 4321);
    const gw = start({ EMBEDDED_PG_DIR: dataDir, EMBEDDED_PG_PORT: String(await freePort()) });

    await expectFailedStart(
      gw,
      new RegExp(`EMBEDDED_PG_DIR ${dataDir} belongs to uid 4321, but the embedded PostgreSQL runs as postgres`),
      /EMBEDDED_PG_DIR=\S+ npm start/,
      new RegExp(`chown -R postgres ${dataDir}`),
    );
  });

  it('PORT taken: names PORT and the next port to try; the embedded PostgreSQL is stopped, quietly', async () => {
    const port = await freePort();
    servers.push(await listenOn(port, undefined));
    const dataDir = join(dir, 'http-port-taken');
    const gw = start({ PORT: String(port), EMBEDDED_PG_DIR: dataDir, EMBEDDED_PG_PORT: String(await freePort()) });

    await expectFailedStart(gw, new RegExp(`Port ${port} \\(PORT\\) is already in use by another program`), new RegExp(`e\\.g\\. PORT=${port + 1} npm start`));
    expect(postgresPids(dataDir)).toEqual([]);
  });

  it('DATABASE_URL where nothing listens: gives up after 10 s, naming DATABASE_URL (password masked)', async () => {
    const port = await freePort();
    const gw = start({ DATABASE_URL: `postgres://gateway:s3cret-pw@127.0.0.1:${port}/gateway` });

    await expectFailedStart(
      gw,
      new RegExp(`Cannot reach the database of DATABASE_URL \\(postgres://gateway:\\*\\*\\*@127\\.0\\.0\\.1:${port}/gateway\\)`),
      /ECONNREFUSED/,
      /gave up after 10 s/,
    );
    expect(gw.stderr + gw.stdout).not.toContain('s3cret-pw');
    const waited = gw.exitedAt! - loggedAt(gw, /Connecting to DATABASE_URL/);
    expect(waited).toBeGreaterThanOrEqual(DATABASE_WAIT_MS - 1_000);
    expect(waited).toBeLessThan(DATABASE_WAIT_MS + 5_000);
  });

  it('a DATABASE_URL whose user may not create tables: the migration refused at once, not ten retries logged as errors', async () => {
    const server = new URL(process.env.TEST_DATABASE_URL!);
    const name = `gateway_no_create_${process.pid}`;
    await sql(server, `CREATE ROLE ${name} LOGIN PASSWORD 'pw'`, `CREATE DATABASE ${name}`);
    cleanups.push(() => sql(server, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`, `DROP ROLE IF EXISTS ${name}`));
    const database = new URL(`/${name}`, server);
    // PostgreSQL before 15 lets every user create tables in the public schema.
    await sql(database, 'REVOKE CREATE ON SCHEMA public FROM PUBLIC');
    Object.assign(database, { username: name, password: 'pw' });
    const gw = start({ DATABASE_URL: database.toString() });

    // An error the gateway did not foresee keeps its stack (docs/operations.md, "A start that fails").
    expect(await gw.exited).toBe(1);
    expect(gw.stderr).toMatch(/^Gateway failed to start: QueryFailedError: permission denied for schema public\n/);
    expect(warningsIn(gw.stdout)).toEqual([]);
    expect(gw.stdout).not.toMatch(/Retrying/);
  });

  it('a GATEWAY_CONFIG file that does not exist: names the file and GATEWAY_CONFIG', async () => {
    const missing = join(dir, 'absent.yaml');
    const gw = start({ GATEWAY_CONFIG: missing, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });

    await expectFailedStart(gw, new RegExp(`${missing}: cannot read YAML: no such file`), /GATEWAY_CONFIG/);
  });
});
