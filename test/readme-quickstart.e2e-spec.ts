import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './support/free-port';
import { GatewayMain } from './support/gateway-main';

const ROOT = join(__dirname, '..');
/** `npm start` builds first (nest build), then starts the embedded PostgreSQL and migrates. */
const START_TIMEOUT_MS = 180_000;

jest.setTimeout(300_000);

/** The README's fenced blocks marked `js quickstart`, in order: what a user pastes into try.mjs. */
function quickstartBlocks(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  return [...readme.matchAll(/^```js quickstart\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

describe("README's quick start, run as a new user would", () => {
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
      expect(run.stdout).toMatch(/^Hello, gateway \{\s+prompt_tokens: \d+,\s+completion_tokens: 3,\s+total_tokens: \d+\s+\}$/m);
      expect(lines).toContain('Stream me word by word');
      expect(statSync(join(project, 'speech.mp3')).size).toBeGreaterThan(1000);
      expect(lines.at(-2)).toContain('meeting is scheduled');
    });
  });
});
