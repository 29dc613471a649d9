import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './support/free-port';
import { GatewayMain } from './support/gateway-main';
import { readmeBlocks } from './support/readme-blocks';

const ROOT = join(__dirname, '..');
/** `npm start` builds first (nest build), then starts the embedded PostgreSQL and migrates. */
const START_TIMEOUT_MS = 180_000;

jest.setTimeout(300_000);

// The README's blocks: `js quickstart` is what a user pastes into try.mjs; `sh try` what a user runs in a shell.
const quickstartBlocks = () => readmeBlocks('js quickstart');

describe("README's quick start, run as a new user would", () => {
  it("shows the shell calls an operator needs: the key's curl, accounts, credits, keys, the spending limit, the usage view", () => {
    const shell = readmeBlocks('sh try').join('\n');
    for (const call of ['/v1/models', '/v1/chat/completions', '/admin/v1/accounts', '/credits', '/keys', '/rotate', '-X PUT $GW/admin/v1/accounts/$ACCOUNT/spending-limit', '/usage?']) {
      expect(shell).toContain(call);
    }
  });

  it('shows the SDK calls users try first', () => {
    const code = quickstartBlocks().join('\n');
    for (const call of [
      'client.models.list()',
      "client.models.retrieve('dev-echo')",
      'client.chat.completions.create(',
      'stream: true',
      "client.audio.speech.create({ model: 'local-tts', voice: 'alloy'",
      "client.audio.transcriptions.create({ model: 'whisper-1'",
    ]) {
      expect(code).toContain(call);
    }
  });

  describe('against `npm start` on a fresh machine (embedded PostgreSQL, the shipped catalog)', () => {
    // Traversable by the `postgres` user the embedded server runs as under root.
    const dir = mkdtempSync(join(tmpdir(), 'gateway-readme-'));
    chmodSync(dir, 0o755);
    // Inside the repository, so that the snippet's `import 'openai'` finds node_modules as in a user's project.
    mkdirSync(join(ROOT, '.data'), { recursive: true });
    const project = mkdtempSync(join(ROOT, '.data', 'readme-quickstart-'));
    let gateway: GatewayMain | undefined;

    afterAll(async () => {
      gateway?.signal('SIGTERM');
      await gateway?.exited;
      rmSync(dir, { recursive: true, force: true });
      rmSync(project, { recursive: true, force: true });
    });

    it('runs the README blocks unchanged (but for the port) and prints what the README says', async () => {
      const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', PORT: '0' };
      const pg = { EMBEDDED_PG_DIR: join(dir, 'pg'), EMBEDDED_PG_PORT: String(await freePort()) };
      gateway = new GatewayMain({ ...env, ...pg }, { command: ['npm', ['start']], processGroup: true });
      const base = await gateway.started(START_TIMEOUT_MS);
      const [, key] = await gateway.waitFor(/Demo API key \(shown once, keep it\): (gwk_[0-9A-Za-z]{49})/, 10_000);

      // README's gateway listens on 8080; this one on a free port.
      const script = quickstartBlocks().join('\n').replaceAll('http://localhost:8080/v1', base);
      writeFileSync(join(project, 'try.mjs'), script);
      const run = spawnSync(process.execPath, ['try.mjs'], { cwd: project, env: { ...env, KEY: key }, encoding: 'utf8', timeout: 120_000 });
      expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });

      const lines = run.stdout.split('\n');
      expect(lines[0]).toBe("[ 'dev-echo', 'local-stt', 'local-tts' ]");
      expect(run.stdout).toMatch(/\{\s+id: 'dev-echo',\s+object: 'model',\s+created: \d+,\s+owned_by: 'local'\s+\}/);
      expect(run.stdout).toMatch(/^Hello, gateway \{\s+prompt_tokens: \d+,\s+completion_tokens: 3,\s+total_tokens: \d+,\s+cost: [\d.e-]+\s+\}$/m);
      expect(lines).toContain('Stream me word by word');
      expect(statSync(join(project, 'speech.mp3')).size).toBeGreaterThan(1000);
      expect(lines.at(-2)).toContain('meeting is scheduled');

      // The README's shell blocks, as a user runs them in a shell, the printed admin token and demo key pasted in.
      const [, adminToken] = await gateway.waitFor(/Admin token \(shown once, keep it\): (gwadm_[0-9A-Za-z_-]{32})/, 1_000);
      const shell = readmeBlocks('sh try')
        .join('\n')
        .replaceAll('http://localhost:8080', base.replace(/\/v1$/, ''))
        .replace('export KEY=gwk_...', `export KEY=${key}`)
        .replace('export ADMIN=gwadm_...', `export ADMIN=${adminToken}`);
      const sh = spawnSync('bash', ['-euo', 'pipefail', '-c', shell], { cwd: project, env, encoding: 'utf8', timeout: 60_000 });
      // (curl's progress meter goes to stderr: shown only when the blocks fail)
      expect({ status: sh.status, stderr: sh.status === 0 ? '' : sh.stderr }).toEqual({ status: 0, stderr: '' });
      const answers = sh.stdout.split(/(?<=\})(?=\{)|\n/).filter((part) => part.startsWith('{')).map((part) => JSON.parse(part));
      expect(answers[0].data.map((m: { id: string }) => m.id)).toEqual(['dev-echo', 'local-stt', 'local-tts']);
      expect(answers[1].choices[0].message.content).toBe('Hello, gateway');
      expect(answers.at(-2)).toMatchObject({ name: 'acme', credits_usd: '10.000000', monthly_limit_usd: '50.000000' });
      const keys = answers.filter((a) => typeof a.key === 'string');
      // the "ci" key's creation is read by json_id; what is printed is its rotation's new key
      expect(keys.map((k) => k.name)).toEqual(['backend', 'ci']);
      expect(answers.at(-1)).toMatchObject({ totals: expect.any(Object) });
    });
  });
});
