import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './support/free-port';
import { GatewayMain, portAnswers, slowPost } from './support/gateway-main';

jest.setTimeout(300_000);

/** `npm start` builds first (nest build); the later starts skip the build (`--ignore-scripts` skips only pre/post scripts). */
const BUILD_AND_START_MS = 180_000;
/** What the issue asks of a stop: every process of the group gone and the port closed within this long of the signal. */
const STOP_BOUND_MS = 10_000;

const ADMIN_TOKEN_LINE = /Admin token \(shown once, keep it\): (gwadm_[0-9A-Za-z_-]{32})/;
const DEMO_ACCOUNT_LINE = /Demo account ([0-9a-f-]{36}): \$5\.00 credits, 14-day trial/;
const DEMO_KEY_LINE = /Demo API key \(shown once, keep it\): (gwk_[0-9A-Za-z]{49})/;

/** Whether any process of the group `pgid` is left (a zombie not yet reaped counts). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

/** Ms from now until `done()` holds, polled; throws past `boundMs`. */
async function msUntil(done: () => Promise<boolean> | boolean, boundMs: number, what: string): Promise<number> {
  const from = Date.now();
  while (!(await done())) {
    if (Date.now() - from > boundMs) throw new Error(`${what}: not within ${boundMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return Date.now() - from;
}

function occupy(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer((socket) => socket.destroy());
    server.once('error', reject);
    // Every address, as the gateway listens: the port is taken whichever stack it binds.
    server.listen(port, () => resolve(server));
  });
}

describe('the first run as a new user meets it (`npm start`, embedded PostgreSQL)', () => {
  // Traversable by the `postgres` user the embedded server runs as under root.
  const dir = mkdtempSync(join(tmpdir(), 'gateway-first-run-'));
  chmodSync(dir, 0o755);
  const running: GatewayMain[] = [];
  let pgPort: number;

  beforeAll(async () => {
    pgPort = await freePort();
  });
  afterAll(async () => {
    for (const gw of running) gw.signal('SIGKILL');
    await Promise.all(running.map((gw) => gw.exited));
    rmSync(dir, { recursive: true, force: true });
  });

  /** `npm start` in a process group of its own, on the suite's data directory; `build: false` skips the prestart build. */
  function npmStart(env: Record<string, string>, { build = false } = {}): GatewayMain {
    const args = build ? ['start'] : ['start', '--ignore-scripts'];
    const gw = new GatewayMain({ EMBEDDED_PG_DIR: join(dir, 'pg'), EMBEDDED_PG_PORT: String(pgPort), ...env }, { command: ['npm', args], processGroup: true });
    running.push(gw);
    return gw;
  }

  /** SIGTERM or SIGINT to the npm process alone, as `kill $!`, `timeout` and supervisors send it. */
  async function expectStopsOn(gw: GatewayMain, signal: NodeJS.Signals, port: number): Promise<void> {
    const pgid = gw.child.pid!;
    process.kill(pgid, signal);
    await msUntil(() => !groupAlive(pgid), STOP_BOUND_MS, `every process of npm start's group gone after ${signal}`);
    expect(await gw.exited).toBe(0);
    expect(await portAnswers(port)).toBe(false);
    expect(await portAnswers(pgPort)).toBe(false);
    expect(gw.stdout).toContain(`${signal} received: finishing in-flight requests`);
    expect(gw.stdout).toContain('Gateway stopped');
  }

  let adminToken: string;
  let demoKey: string;
  let demoAccountId: string;

  it('a first start whose port is taken shows nothing; the next start that listens shows the admin token and the demo key, and they work', async () => {
    const port = await freePort();
    const holder = await occupy(port);
    const failed = npmStart({ PORT: String(port) }, { build: true });
    expect(await failed.exited).toBe(1);
    expect(failed.stderr).toContain(`Gateway failed to start: Port ${port} (PORT) is already in use`);
    expect(failed.stdout).not.toMatch(/Admin token \(|Demo API key|gwadm_|gwk_/);
    expect(groupAlive(failed.child.pid!)).toBe(false);
    await new Promise((r) => holder.close(r));

    const gw = npmStart({ PORT: String(port) });
    const base = await gw.started(BUILD_AND_START_MS);
    [, adminToken] = await gw.waitFor(ADMIN_TOKEN_LINE, 5_000);
    [, demoAccountId] = await gw.waitFor(DEMO_ACCOUNT_LINE, 5_000);
    [, demoKey] = await gw.waitFor(DEMO_KEY_LINE, 5_000);
    expect(gw.stdout).toContain('(sign in with the admin token above)');

    const chat = await fetch(`${base}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${demoKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'dev-echo', messages: [{ role: 'user', content: 'still here' }] }),
    });
    expect(chat.status).toBe(200);
    expect(((await chat.json()) as any).choices[0].message.content).toBe('still here');
    const origin = base.replace(/\/v1$/, '');
    const account = await fetch(`${origin}/admin/v1/accounts/${demoAccountId}`, { headers: { authorization: `Bearer ${adminToken}` } });
    expect(account.status).toBe(200);
    expect(await account.json()).toMatchObject({ id: demoAccountId, name: 'demo', subscription: { status: 'trial' } });
    await expectStopsOn(gw, 'SIGTERM', port);
  });

  it('shown once: a later start shows neither again, and both still work', async () => {
    expect(demoKey).toBeDefined();
    const gw = npmStart({ PORT: '0' });
    const base = await gw.started(BUILD_AND_START_MS);
    const models = await fetch(`${base}/models`, { headers: { authorization: `Bearer ${demoKey}` } });
    const account = await fetch(`${base.replace(/\/v1$/, '')}/admin/v1/accounts/${demoAccountId}`, { headers: { authorization: `Bearer ${adminToken}` } });
    expect([models.status, account.status]).toEqual([200, 200]);
    expect(gw.stdout).toContain('sign in with ADMIN_TOKEN or the admin token printed at the first start; lost it: README.md, \\"Admin token\\"');
    await expectStopsOn(gw, 'SIGINT', Number(new URL(base).port));
    expect(gw.stdout).not.toMatch(/Admin token \(|Demo API key/);
    expect(gw.stdout).not.toContain(demoKey);
    expect(gw.stdout).not.toContain(adminToken);
  });

  it('SIGTERM to the `npm start` process drains the request in flight, then leaves no process of its group and the port closed', async () => {
    expect(adminToken).toBeDefined();
    const gw = npmStart({ PORT: '0' });
    const base = await gw.started(BUILD_AND_START_MS);
    const origin = base.replace(/\/v1$/, '');
    const headers = { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' };
    const inFlight = slowPost(`${origin}/admin/v1/accounts`, headers, '{"name": ');
    await new Promise((r) => setTimeout(r, 200));

    const pgid = gw.child.pid!;
    process.kill(pgid, 'SIGTERM');
    await gw.waitFor(/SIGTERM received: finishing in-flight requests/, STOP_BOUND_MS);
    inFlight.finish('"drained"}');
    const late = await inFlight.response;
    expect(late.status).toBe(201);
    expect(JSON.parse(late.body).name).toBe('drained');

    await msUntil(() => !groupAlive(pgid), STOP_BOUND_MS, 'every process of the group gone');
    expect(await gw.exited).toBe(0);
    expect(await portAnswers(Number(new URL(base).port))).toBe(false);
    expect(await portAnswers(pgPort)).toBe(false);
  });
});
