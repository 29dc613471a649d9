import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startTestApp, TEST_ADMIN_TOKEN, TestApp } from './support/test-app';

const ROOT = join(__dirname, '..');
const run = promisify(execFile);

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

// Each command is a process of its own that compiles the CLI (ts-node): 2–6 s apiece on a loaded 2-core machine.
jest.setTimeout(180_000);

describe('admin CLI (npm run admin -- <command>)', () => {
  let gw: TestApp;

  /** Runs the CLI as its own process, the way `npm run admin --` does (ts-node, transpile only). */
  const cli = async (args: string[], env: Record<string, string | undefined> = {}): Promise<CliResult> => {
    const childEnv: Record<string, string | undefined> = { ...process.env, GATEWAY_URL: gw.url, ADMIN_TOKEN: TEST_ADMIN_TOKEN, ...env };
    for (const [k, v] of Object.entries(childEnv)) if (v === undefined) delete childEnv[k];
    try {
      const { stdout, stderr } = await run(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/cli/admin-cli.ts', ...args], {
        cwd: ROOT,
        env: childEnv,
      });
      return { code: 0, stdout, stderr, json: stdout.startsWith('{') || stdout.startsWith('[') ? JSON.parse(stdout) : null };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr, json: null };
    }
  };
  const models = (key: string) => fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });

  beforeAll(async () => {
    gw = await startTestApp();
  });
  afterAll(() => gw.close());

  it('creates, updates and rotates a key with its controls (issue 24)', async () => {
    const accountId: string = (await cli(['accounts', 'create', 'Keyed'])).json.id;
    const created = await cli(['keys', 'create', accountId, '--name', 'svc', '--monthly-limit', '2.5', '--expires-at', '2099-01-01', '--models', 'dev-echo']);
    expect(created.json).toMatchObject({ name: 'svc', monthly_limit_usd: '2.500000', expires_at: '2099-01-01T00:00:00.000Z', models: ['dev-echo'], month_spend_usd: '0.000000' });
    const updated = await cli(['keys', 'update', created.json.id, '--monthly-limit', 'none', '--models', 'all']);
    expect(updated.json).toMatchObject({ name: 'svc', monthly_limit_usd: null, expires_at: '2099-01-01T00:00:00.000Z', models: null });
    const rotated = await cli(['keys', 'rotate', created.json.id, '--grace', '60']);
    expect(rotated.json).toMatchObject({ name: 'svc', expires_at: '2099-01-01T00:00:00.000Z' });
    expect(rotated.json.key).toMatch(/^gwk_/);
    expect((await models(rotated.json.key)).status).toBe(200);
    expect((await models(created.json.key)).status).toBe(200); // within its grace period
    const bad = await cli(['keys', 'rotate', created.json.id, '--grace', 'soon']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('invalid_request_error');
  });

  it('runs every command end to end against a running gateway', async () => {
    const created = await cli(['accounts', 'create', 'CLI', 'customer']);
    expect(created.code).toBe(0);
    expect(created.json).toMatchObject({ name: 'CLI customer', credits_usd: '0.000000', monthly_limit_usd: null });
    const accountId: string = created.json.id;

    const key = await cli(['keys', 'create', accountId, '--name', 'ci']);
    expect(key.json.key).toMatch(/^gwk_/);
    expect((await models(key.json.key)).status).toBe(200);

    const list = await cli(['keys', 'list', accountId]);
    expect(JSON.stringify(list.json)).toContain(key.json.id);
    expect(list.stdout).not.toContain(key.json.key);

    expect((await cli(['credits', 'add', accountId, '12.345678'])).json.credits_usd).toBe('12.345678');
    expect((await cli(['credits', 'add', accountId, '0.000001'])).json.credits_usd).toBe('12.345679');
    expect((await cli(['spending-limit', 'set', accountId, '5'])).json.monthly_limit_usd).toBe('5.000000');
    expect((await cli(['spending-limit', 'set', accountId, 'none'])).json.monthly_limit_usd).toBeNull();
    expect((await cli(['subscription', 'set', accountId, 'trial'])).json.subscription.status).toBe('trial');
    const active = await cli(['subscription', 'set', accountId, 'active', '--ends-at', '2031-01-01T00:00:00Z']);
    expect(active.json.subscription).toMatchObject({ status: 'active', ends_at: '2031-01-01T00:00:00.000Z' });

    const shown = await cli(['accounts', 'show', accountId]);
    expect(shown.json).toMatchObject({ id: accountId, credits_usd: '12.345679', subscription: { status: 'active' } });

    const usage = await cli(['usage', 'show', accountId]);
    expect({ code: usage.code, stderr: usage.code === 0 ? '' : usage.stderr }).toEqual({ code: 0, stderr: '' });
    expect(usage.json.account_id).toBe(accountId);
    expect(usage.json.totals.requests).toBe(1);
    expect(usage.json.by_key).toEqual([expect.objectContaining({ key_id: key.json.id, requests: 1 })]);
    const past = await cli(['usage', 'show', accountId, '--from', '2020-01-01', '--to', '2020-01-31']);
    expect(past.json.totals.requests).toBe(0);

    // The statement (issue 35): the two top-ups, reconciled; as CSV, printed as it came.
    const statement = await cli(['statement', accountId]);
    expect(statement.json).toMatchObject({ account_id: accountId, opening_balance_micros: '0', movement_count: 2, closing_balance_micros: '12345679' });
    expect(statement.json.movements.map((m: any) => m.amount_micros)).toEqual(['12345678', '1']);
    const csv = await cli(['statement', accountId, '--csv', '--from', '2020-01-01']);
    expect(csv.code).toBe(0);
    const rows = csv.stdout.trimEnd().split('\r\n');
    expect(rows).toHaveLength(5);
    expect(rows[4]).toMatch(/^closing_balance,,[^,]+,,12345679,12345679/);
    expect((await cli(['statement'])).code).toBe(2);

    expect((await cli(['keys', 'revoke', key.json.id])).code).toBe(0);
    expect((await models(key.json.key)).status).toBe(401);
  });

  it('is wired as `npm run admin --`', async () => {
    const { stdout } = await run('npm', ['run', '-s', 'admin', '--', 'accounts', 'create', 'via-npm'], {
      cwd: ROOT,
      env: { ...process.env, GATEWAY_URL: gw.url, ADMIN_TOKEN: TEST_ADMIN_TOKEN },
    });
    expect(JSON.parse(stdout)).toMatchObject({ name: 'via-npm' });
  });

  it("exits 1 with the API's error code on a failed call, and 2 on a usage mistake", async () => {
    const unknown = await cli(['accounts', 'show', '00000000-0000-4000-8000-000000000000']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('404: not_found');

    const { json } = await cli(['accounts', 'create', 'bad-credits']);
    const bad = await cli(['credits', 'add', json.id, '1.0000001']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('invalid_request_error');

    const wrongToken = await cli(['accounts', 'show', json.id], { ADMIN_TOKEN: 'wrong' });
    expect(wrongToken.code).toBe(1);
    expect(wrongToken.stderr).toContain('invalid_admin_token');

    const noToken = await cli(['accounts', 'show', json.id], { ADMIN_TOKEN: undefined });
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain('ADMIN_TOKEN is not set');

    for (const args of [['keys', 'frobnicate'], ['keys', 'list'], ['credits', 'add', json.id]]) {
      const mistake = await cli(args);
      expect([args, mistake.code]).toEqual([args, 2]);
      expect(mistake.stderr).toContain('Usage: npm run admin');
    }

    const unreachable = await cli(['accounts', 'show', json.id], { GATEWAY_URL: 'http://127.0.0.1:1' });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toContain('Could not reach the gateway');
  });
});
