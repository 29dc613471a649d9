import { ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';

const ROOT = join(__dirname, '..');
const STARTUP_TIMEOUT_MS = 90_000;

jest.setTimeout(240_000);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
    socket.connect(port, '127.0.0.1');
  });
}

/** The real `src/main.ts` in a child process, as `npm start` runs it, without DATABASE_URL. */
class Gateway {
  readonly child: ChildProcessWithoutNullStreams;
  stdout = '';
  stderr = '';
  readonly exited: Promise<number | null>;

  constructor(env: Record<string, string>) {
    this.child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/main.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', PORT: '0', ...env },
    });
    this.child.stdout.on('data', (d) => (this.stdout += d));
    this.child.stderr.on('data', (d) => (this.stderr += d));
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
  }

  /** Resolves with the first match of `pattern` in stdout, failing if the process exits first. */
  async waitFor(pattern: RegExp, timeoutMs = STARTUP_TIMEOUT_MS): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    let exitCode: number | null | undefined;
    void this.exited.then((code) => (exitCode = code));
    for (;;) {
      const match = this.stdout.match(pattern);
      if (match) return match;
      if (exitCode !== undefined || Date.now() > deadline) {
        throw new Error(`no ${pattern} (exit ${exitCode})\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async started(): Promise<string> {
    const [, base] = await this.waitFor(/Gateway listening on (http:\/\/localhost:\d+\/v1)\n/);
    return base;
  }

  stop(): void {
    if (this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}

/** A POST whose body is sent in two parts, so the request is still in flight between them. */
function slowPost(url: string, headers: Record<string, string>, first: string) {
  const target = new URL(url);
  let finish!: (rest: string) => void;
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request({ host: target.hostname, port: target.port, path: target.pathname, method: 'POST', headers }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.write(first);
    finish = (rest) => req.end(rest);
  });
  return { response, finish: (rest: string) => finish(rest) };
}

function occurrences(text: string, needle: string): number {
  return text.split(needle).length - 1;
}

describe('npm start on a fresh machine (embedded PostgreSQL)', () => {
  // Made at collection time, traversable by the `postgres` user the package runs PostgreSQL as under root.
  const dir = mkdtempSync(join(tmpdir(), 'gateway-start-'));
  chmodSync(dir, 0o755);
  const dataDir = join(dir, 'pg');
  const running: Gateway[] = [];
  let pgPort: number;
  let demoKey: string;
  let adminToken: string;

  beforeAll(async () => {
    pgPort = await freePort();
  });
  afterAll(async () => {
    for (const gw of running) gw.stop();
    await Promise.all(running.map((gw) => gw.exited));
    rmSync(dir, { recursive: true, force: true });
  });

  function start(): Gateway {
    const gw = new Gateway({ EMBEDDED_PG_DIR: dataDir, EMBEDDED_PG_PORT: String(pgPort) });
    running.push(gw);
    return gw;
  }

  it('first start: embedded PostgreSQL, migrations, the demo key and admin token printed once; SIGTERM drains and exits 0', async () => {
    const gw = start();
    const base = await gw.started();
    [, adminToken] = await gw.waitFor(/Admin token \(shown once, keep it\): (\S+)\n/);
    [, demoKey] = await gw.waitFor(/Demo API key \(shown once, keep it\): (gwk_[0-9A-Za-z]{49})\n/);
    expect(gw.stdout).toContain(`No DATABASE_URL: starting embedded PostgreSQL (data in ${dataDir}, port ${pgPort})`);
    expect(existsSync(join(dataDir, 'PG_VERSION'))).toBe(true);

    const client = new OpenAI({ apiKey: demoKey, baseURL: base, maxRetries: 0 });
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(expect.arrayContaining(['dev-echo', 'local-stt', 'local-tts']));

    const origin = base.replace(/\/v1$/, '');
    const adminHeaders = { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' };
    const [, demoAccountId] = gw.stdout.match(/Demo account ([0-9a-f-]{36}):/)!;
    const account = (await (await fetch(`${origin}/admin/v1/accounts/${demoAccountId}`, { headers: adminHeaders })).json()) as any;
    expect(account).toMatchObject({ name: 'demo', credits_usd: '5.000000', subscription: { status: 'trial' } });
    expect(new Date(account.subscription.ends_at).getTime()).toBeGreaterThan(Date.now() + 13 * 86_400_000);

    // An admin request still receiving its body when SIGTERM arrives is finished, database and all.
    const inFlight = slowPost(`${origin}/admin/v1/accounts`, { ...adminHeaders, 'transfer-encoding': 'chunked' }, '{"name": ');
    await new Promise((r) => setTimeout(r, 200));
    gw.child.kill('SIGTERM');
    await gw.waitFor(/SIGTERM received: finishing in-flight requests\n/, 5_000);
    await new Promise((r) => setTimeout(r, 300));
    inFlight.finish('"late"}');
    const late = await inFlight.response;
    expect(late.status).toBe(201);
    expect(JSON.parse(late.body).name).toBe('late');

    expect(await gw.exited).toBe(0);
    expect(gw.stdout).toContain('Gateway stopped\n');
    expect(await portAnswers(pgPort)).toBe(false);
    expect(existsSync(join(dataDir, 'postmaster.pid'))).toBe(false);
    // Shown once, and never again in the request logs.
    expect(occurrences(gw.stdout + gw.stderr, demoKey)).toBe(1);
    expect(occurrences(gw.stdout + gw.stderr, adminToken)).toBe(1);
  });

  it('second start: same data, nothing printed again, the demo key and admin token still work', async () => {
    expect(demoKey).toBeDefined();
    const gw = start();
    const base = await gw.started();
    const origin = base.replace(/\/v1$/, '');

    const models = await fetch(`${base}/models`, { headers: { authorization: `Bearer ${demoKey}` } });
    expect(models.status).toBe(200);
    const accounts = await fetch(`${origin}/admin/v1/accounts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: '{"name": "after restart"}',
    });
    expect(accounts.status).toBe(201);

    gw.child.kill('SIGINT');
    expect(await gw.exited).toBe(0);
    expect(gw.stdout).not.toMatch(/Demo API key|Admin token/);
    expect(gw.stdout).not.toContain(demoKey);
    expect(gw.stdout).not.toContain(adminToken);
    expect(await portAnswers(pgPort)).toBe(false);
  });

  it('request logs: one JSON access-log line per request with its id and status, never a credential', async () => {
    expect(demoKey).toBeDefined();
    const gw = start();
    const base = await gw.started();
    const origin = base.replace(/\/v1$/, '');
    const forgedKey = 'gwk_forgedForgedForgedForgedForgedForgedForgedForge1';
    const secrets = { cookie: 'session=cookie-secret-4711', 'x-api-key': 'x-api-key-secret-4711' };

    const ok = await fetch(`${base}/models?page=1`, { headers: { authorization: `Bearer ${demoKey}`, ...secrets } });
    const denied = await fetch(`${base}/models`, { headers: { authorization: `Bearer ${forgedKey}` } });
    const admin = await fetch(`${origin}/admin/v1/accounts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: '{"name": "logged"}',
    });
    const health = await fetch(`${origin}/healthz`);
    expect([ok.status, denied.status, admin.status, health.status]).toEqual([200, 401, 201, 200]);
    const [okId, deniedId, adminId, healthId] = [ok, denied, admin, health].map((r) => r.headers.get('x-request-id')!);
    await gw.waitFor(new RegExp(adminId));

    gw.child.kill('SIGTERM');
    expect(await gw.exited).toBe(0);
    const lines = gw.stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const accessLines = (requestId: string) => lines.filter((l) => l.requestId === requestId);
    expect(accessLines(okId)).toEqual([
      expect.objectContaining({ level: 30, msg: 'request completed', method: 'GET', path: '/v1/models', status: 200, responseTimeMs: expect.any(Number) }),
    ]);
    expect(accessLines(deniedId)).toEqual([expect.objectContaining({ msg: 'request completed', path: '/v1/models', status: 401 })]);
    expect(accessLines(adminId)).toEqual([expect.objectContaining({ method: 'POST', path: '/admin/v1/accounts', status: 201 })]);
    expect(gw.stdout).not.toContain(healthId);
    // Nest's own boot logs go through the same pino logger, with their context.
    expect(lines).toContainEqual(expect.objectContaining({ context: 'NestApplication', msg: 'Nest application successfully started' }));

    const output = gw.stdout + gw.stderr;
    for (const secret of [demoKey, forgedKey, adminToken, ...Object.values(secrets)]) expect(output).not.toContain(secret);
    expect(output).not.toMatch(/authorization|Bearer/i);
  });
});
