import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { freePort } from './support/free-port';
import { GatewayMain, portAnswers, slowPost } from './support/gateway-main';

jest.setTimeout(240_000);

/** The first start's four lines, in the order the README shows them. */
const FIRST_START_LINES = [
  /^Gateway listening on http:\/\/localhost:\d+\/v1$/,
  /^Admin token \(shown once, keep it\): gwadm_[0-9A-Za-z_-]{32}$/,
  /^Demo account [0-9a-f-]{36}: \$5\.00 credits, 14-day trial$/,
  /^Demo API key \(shown once, keep it\): gwk_[0-9A-Za-z]{49}$/,
];

function occurrences(text: string, needle: string): number {
  return text.split(needle).length - 1;
}

describe('npm start on a fresh machine (embedded PostgreSQL)', () => {
  // Made at collection time, traversable by the `postgres` user the package runs PostgreSQL as under root.
  const dir = mkdtempSync(join(tmpdir(), 'gateway-start-'));
  chmodSync(dir, 0o755);
  const dataDir = join(dir, 'pg');
  const running: GatewayMain[] = [];
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

  function start(env: Record<string, string> = {}): GatewayMain {
    const gw = new GatewayMain({ EMBEDDED_PG_DIR: dataDir, EMBEDDED_PG_PORT: String(pgPort), ...env });
    running.push(gw);
    return gw;
  }

  it('first start: embedded PostgreSQL, migrations, the demo key and admin token printed once; SIGTERM drains and exits 0', async () => {
    const gw = start();
    const base = await gw.started();
    [, adminToken] = await gw.waitFor(/Admin token \(shown once, keep it\): (gwadm_[0-9A-Za-z_-]{32})/);
    [, demoKey] = await gw.waitFor(/Demo API key \(shown once, keep it\): (gwk_[0-9A-Za-z]{49})/);
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
    await gw.waitFor(/SIGTERM received: finishing in-flight requests/, 5_000);
    await new Promise((r) => setTimeout(r, 300));
    inFlight.finish('"late"}');
    const late = await inFlight.response;
    expect(late.status).toBe(201);
    expect(JSON.parse(late.body).name).toBe('late');

    expect(await gw.exited).toBe(0);
    expect(gw.stdout).toContain('Gateway stopped');
    expect(await portAnswers(pgPort)).toBe(false);
    expect(existsSync(join(dataDir, 'postmaster.pid'))).toBe(false);
    // Shown once, and never again in the request logs.
    expect(occurrences(gw.stdout + gw.stderr, demoKey)).toBe(1);
    expect(occurrences(gw.stdout + gw.stderr, adminToken)).toBe(1);

    // stdout is not a terminal here: JSON lines, every one of them, the first-start block included.
    const lines = gw.jsonLines();
    const messages = lines.filter((l) => l.level === 30 && l.context === 'Gateway').map((l) => String(l.msg));
    expect(messages.slice(0, 4)).toEqual(FIRST_START_LINES.map((line) => expect.stringMatching(line)));
    expect(messages).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^Next: README\.md, "Try it"/),
        `Dashboard: ${origin}/dashboard (sign in with the admin token above)`,
        `API docs: ${origin}/docs`,
        `Database: embedded PostgreSQL, data in ${dataDir}, port ${pgPort} (DATABASE_URL unset)`,
      ]),
    );
    // Nest's start-up narration is debug, below the default LOG_LEVEL=info.
    expect(lines.filter((l) => /^(NestFactory|InstanceLoader|RoutesResolver|RouterExplorer|NestApplication)$/.test(String(l.context)))).toEqual([]);
  });

  it('second start: same data, nothing printed again, the demo key and admin token still work', async () => {
    expect(demoKey).toBeDefined();
    // LOG_LEVEL=warn silences info lines, but not the start lines (started() waits for "Gateway listening on").
    const gw = start({ LOG_LEVEL: 'warn' });
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
    expect(gw.stdout).not.toMatch(/Demo API key|Admin token \(/);
    expect(gw.stdout).not.toContain(demoKey);
    expect(gw.stdout).not.toContain(adminToken);
    expect(await portAnswers(pgPort)).toBe(false);
  });

  it('request logs: one JSON access-log line per request with its id and status, never a credential', async () => {
    expect(demoKey).toBeDefined();
    const gw = start({ LOG_LEVEL: 'debug' });
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
    const lines = gw.jsonLines();
    const accessLines = (requestId: string) => lines.filter((l) => l.requestId === requestId);
    expect(accessLines(okId)).toEqual([
      expect.objectContaining({ level: 30, msg: 'request completed', method: 'GET', path: '/v1/models', status: 200, responseTimeMs: expect.any(Number) }),
    ]);
    expect(accessLines(deniedId)).toEqual([expect.objectContaining({ msg: 'request completed', path: '/v1/models', status: 401 })]);
    expect(accessLines(adminId)).toEqual([expect.objectContaining({ method: 'POST', path: '/admin/v1/accounts', status: 201 })]);
    expect(gw.stdout).not.toContain(healthId);
    // Nest's own boot logs go through the same pino logger, with their context, at debug.
    expect(lines).toContainEqual(expect.objectContaining({ level: 20, context: 'NestApplication', msg: 'Nest application successfully started' }));
    expect(lines).toContainEqual(expect.objectContaining({ level: 20, context: 'RouterExplorer', msg: 'Mapped {/v1/models, GET} route' }));

    const output = gw.stdout + gw.stderr;
    for (const secret of [demoKey, forgedKey, adminToken, ...Object.values(secrets)]) expect(output).not.toContain(secret);
    expect(output).not.toMatch(/authorization|Bearer/i);
  });
});

describe('npm start in pretty mode (LOG_FORMAT=pretty, what a terminal gets)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-pretty-'));
  chmodSync(dir, 0o755);
  let gw: GatewayMain | undefined;

  afterAll(async () => {
    gw?.stop();
    await gw?.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  it('the first-start block comes before any info line, as readable lines, and says where to go next', async () => {
    gw = new GatewayMain({ LOG_FORMAT: 'pretty', EMBEDDED_PG_DIR: join(dir, 'pg'), EMBEDDED_PG_PORT: String(await freePort()) });
    const base = await gw.started();
    const [, key] = await gw.waitFor(/Demo API key \(shown once, keep it\): (gwk_[0-9A-Za-z]{49})/);
    // Info lines after the block: an access line, then the shutdown's.
    expect((await fetch(`${base}/models`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
    await gw.waitFor(/INFO: request completed/);
    gw.child.kill('SIGTERM');
    expect(await gw.exited).toBe(0);

    const lines = gw.stdout.split('\n').map((line) => line.trim());
    const blockAt = FIRST_START_LINES.map((pattern) => lines.findIndex((line) => pattern.test(line)));
    expect(blockAt.every((at) => at >= 0)).toBe(true);
    expect(blockAt).toEqual([...blockAt].sort((a, b) => a - b));
    const infoAt = lines.map((line, at) => (/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: /.test(line) ? at : -1)).filter((at) => at >= 0);
    expect(infoAt.length).toBeGreaterThanOrEqual(3);
    expect(Math.min(...infoAt)).toBeGreaterThan(Math.max(...blockAt));
    expect(lines).toContainEqual(expect.stringMatching(/^\[[\d:.]+\] INFO: Gateway: Gateway stopped$/));

    const origin = base.replace(/\/v1$/, '');
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^Next: README\.md, "Try it"/),
        `Dashboard: ${origin}/dashboard (sign in with the admin token above)`,
        `API docs: ${origin}/docs`,
      ]),
    );
    // Nothing for a machine: no JSON line, no framework narration at the default level.
    expect(gw.stdout).not.toMatch(/^\{/m);
    expect(gw.stdout).not.toMatch(/RouterExplorer|InstanceLoader|NestApplication|Mapped \{/);
  });
});
