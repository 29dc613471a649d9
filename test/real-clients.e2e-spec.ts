import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AdminClient } from './support/admin-client';
import { ClientCapture, startClientCapture } from './support/client-capture';
import { FakeAnthropic } from './support/fake-anthropic';
import { OwnGateway, startOwnGateway } from './support/own-gateway';

/**
 * The agent CLIs themselves (test/clients/package.json pins them) against a gateway on the embedded default
 * catalog (dev-echo), with their default settings: the answer, and a tool loop that dev-echo drives offline
 * (DESIGN.md section 11). A recording pass-through between them keeps what they sent, printed when a test fails.
 */
const CLIENTS = join(__dirname, 'clients', 'node_modules', '.bin');
const CLAUDE = join(CLIENTS, 'claude');
const CODEX = join(CLIENTS, 'codex');
const HEADER = 'x-gateway-ignored-params';
/** The platforms whose binaries the two npm packages ship (their optional dependencies). */
const SHIPPED = ['linux-x64', 'linux-arm64', 'darwin-x64', 'darwin-arm64', 'win32-x64', 'win32-arm64'];
const platform = `${process.platform}-${process.arch}`;
const runnable = SHIPPED.includes(platform);
if (!runnable) {
  console.warn(`\n!!! test/real-clients: SKIPPED. Claude Code and the Codex CLI ship no binary for ${platform}; the real-client tests cannot run here. !!!\n`);
}

/** What a CLI run printed and how it ended. */
interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a CLI with no stdin and only the given environment (and PATH), killed after `timeoutMs`. */
function runCli(command: string, args: string[], env: Record<string, string>, cwd: string, timeoutMs = 120_000): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

(runnable ? describe : describe.skip)('The real agent CLIs against the gateway on dev-echo (issue 32)', () => {
  let gateway: OwnGateway;
  let capture: ClientCapture;
  let key: string;
  let work: string;
  let secretFile: string;
  /** An `anthropic` upstream for the catalog model `claude-native` (issue 33). */
  let anthropicFake: FakeAnthropic;

  beforeAll(async () => {
    for (const binary of [CLAUDE, CODEX]) {
      if (!existsSync(binary)) throw new Error(`${binary} is missing: install the real clients with \`npm ci --prefix test/clients\` (.ci/run does).`);
    }
    anthropicFake = await new FakeAnthropic().start();
    gateway = await startOwnGateway({
      env: { FAKE_ANTHROPIC_KEY: anthropicFake.apiKey },
      config: (raw) => {
        raw.providers.anthropic = { type: 'anthropic', base_url: anthropicFake.url, api_key_env: 'FAKE_ANTHROPIC_KEY' };
        raw.catalog.push({
          id: 'claude-native',
          kind: 'chat',
          provider: 'anthropic',
          upstream_model: 'claude-sonnet-4-6',
          input_price_per_million: 3,
          cached_input_price_per_million: 0.3,
          cache_write_price_per_million: 3.75,
          cache_write_1h_price_per_million: 6,
          output_price_per_million: 15,
          max_output_tokens: 64000,
        });
      },
    });
    capture = await startClientCapture(gateway.url);
    ({ key } = await new AdminClient(gateway.url).createAccount({ creditsUsd: '5' }));
    work = mkdtempSync(join(tmpdir(), 'real-clients-'));
    secretFile = join(work, 'secret.txt');
    writeFileSync(secretFile, 'The vault code is 4217-ORCHID.\n');
  }, 60_000);

  afterAll(async () => {
    await capture?.close();
    await gateway?.stop();
    await anthropicFake?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  beforeEach(() => capture.exchanges.splice(0));

  /** The exchanges on `path`, failing with what the client sent and got when one was not a success. */
  function exchangesOn(path: string, run: CliRun) {
    const on = capture.exchanges.filter((e) => e.method === 'POST' && e.path.split('?')[0] === path);
    const failed = on.find((e) => e.status !== 200);
    if (on.length === 0 || failed) {
      throw new Error(`expected successful POST ${path}; the client's exchanges:\n${capture.summary()}\nexit ${run.code}\nstdout: ${run.stdout.slice(-2000)}\nstderr: ${run.stderr.slice(-2000)}`);
    }
    return on;
  }

  /** A fresh HOME per run: no settings or login of the machine's user reach the CLI. */
  function freshHome(name: string): string {
    const home = join(work, `home-${name}-${capture.exchanges.length}-${Date.now()}`);
    mkdirSync(home, { recursive: true });
    return home;
  }

  describe('Claude Code', () => {
    function claude(prompt: string, auth: Record<string, string>, model = 'dev-echo'): Promise<CliRun> {
      return runCli(CLAUDE, ['-p', prompt, '--model', model], { HOME: freshHome('claude'), ANTHROPIC_BASE_URL: capture.url, ...auth }, work);
    }

    it('runs against an `anthropic` model: its body reaches Anthropic as sent, cache_control and thinking intact (issue 33)', async () => {
      anthropicFake.resetState();
      anthropicFake.reply = { text: 'Hello from Claude through the gateway.' };
      const run = await claude('say hi to Claude', { ANTHROPIC_AUTH_TOKEN: key }, 'claude-native');
      const sent = exchangesOn('/v1/messages', run).filter((e) => e.body?.model === 'claude-native');
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('Hello from Claude through the gateway.');
      const upstream = anthropicFake.requests.filter((r) => r.path === '/v1/messages');
      expect(upstream.length).toBeGreaterThan(0);
      expect(upstream.length).toBe(sent.length);
      // What Claude Code sent, as Anthropic got it: only the model differs; no ignored-params header on this path.
      const [first] = sent;
      expect(upstream[0].body).toEqual({ ...first.body, model: 'claude-sonnet-4-6' });
      expect(upstream[0].rawBody).toContain('"cache_control"');
      expect(upstream[0].body.thinking).toEqual(first.body.thinking);
      expect(upstream[0].headers['anthropic-beta']).toBe(first.headers['anthropic-beta']);
      expect(first.responseHeaders[HEADER]).toBeUndefined();
    }, 150_000);

    it.each([
      ['ANTHROPIC_AUTH_TOKEN', 'authorization'],
      ['ANTHROPIC_API_KEY', 'x-api-key'],
    ])('`claude -p` with its default settings and %s answers the prompt', async (variable, header) => {
      const run = await claude('say hi to the gateway', { [variable]: key });
      const [first, ...rest] = exchangesOn('/v1/messages', run);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('say hi to the gateway');
      expect(first.headers[header]).toContain(key);
      // Its defaults: adaptive thinking and effort, context editing, a system-role entry among the messages; all served or named.
      expect(first.body).toMatchObject({ thinking: expect.any(Object), output_config: expect.any(Object), stream: true });
      expect(first.body.messages.some((m: any) => m.role === 'system')).toBe(true);
      expect(String(first.responseHeaders[HEADER]).split(',')).toEqual(expect.arrayContaining(['thinking', 'output_config']));
      expect(rest.every((e) => e.status === 200)).toBe(true);
    }, 150_000);

    it("runs a tool loop offline: dev-echo calls Read, Claude Code reads the file, its content ends in the output", async () => {
      const run = await claude(`call Read {"file_path": "${secretFile}"}`, { ANTHROPIC_AUTH_TOKEN: key });
      const turns = exchangesOn('/v1/messages', run).filter((e) => Array.isArray(e.body?.tools) && e.body.tools.length > 0);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('The vault code is 4217-ORCHID.');
      // The second turn carries the tool_result of the call dev-echo made.
      const results = turns.flatMap((e) => e.body.messages.flatMap((m: any) => (Array.isArray(m.content) ? m.content : []))).filter((b: any) => b.type === 'tool_result');
      expect(results.length).toBeGreaterThan(0);
    }, 150_000);
  });

  describe('Codex CLI', () => {
    /** `codex exec` with a custom provider on wire_api = "responses", as docs/responses.md shows; its last message is read from -o. */
    async function codex(prompt: string, args: string[] = []): Promise<CliRun & { lastMessage: string }> {
      const home = freshHome('codex');
      const codexHome = join(home, '.codex');
      mkdirSync(codexHome);
      writeFileSync(
        join(codexHome, 'config.toml'),
        [
          'model = "dev-echo"',
          'model_provider = "gateway"',
          '',
          '[model_providers.gateway]',
          'name = "AI gateway"',
          `base_url = "${capture.url}/v1"`,
          'env_key = "GATEWAY_API_KEY"',
          'wire_api = "responses"',
          '',
        ].join('\n'),
      );
      const last = join(home, 'last-message.txt');
      const run = await runCli(CODEX, ['exec', '--skip-git-repo-check', '-C', work, '-o', last, ...args, prompt], { HOME: home, CODEX_HOME: codexHome, GATEWAY_API_KEY: key }, work);
      return { ...run, lastMessage: existsSync(last) ? readFileSync(last, 'utf8') : '' };
    }

    it('`codex exec` with its default tools answers the prompt', async () => {
      const run = await codex('say hi to the gateway');
      const [first] = exchangesOn('/v1/responses', run);
      expect(run.code).toBe(0);
      expect(run.lastMessage).toContain('say hi to the gateway');
      expect(first.body).toMatchObject({ stream: true, store: false, include: ['reasoning.encrypted_content'] });
      expect(first.body.tools.map((t: any) => t.type)).toEqual(expect.arrayContaining(['function', 'namespace', 'web_search']));
      expect(String(first.responseHeaders[HEADER]).split(',')).toEqual(expect.arrayContaining(['tools:web_search', 'include:reasoning.encrypted_content', 'client_metadata']));
    }, 150_000);

    it('runs a tool loop through its shell tool: dev-echo calls exec_command, Codex runs it, the output ends in its answer', async () => {
      const run = await codex(`call exec_command {"cmd": "cat ${secretFile}"}`);
      const turns = exchangesOn('/v1/responses', run);
      expect(run.code).toBe(0);
      expect(run.lastMessage).toContain('The vault code is 4217-ORCHID.');
      const outputs = turns.flatMap((e) => (Array.isArray(e.body.input) ? e.body.input : [])).filter((item: any) => item.type === 'function_call_output');
      expect(outputs.length).toBeGreaterThan(0);
    }, 150_000);
  });
});
