import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AdminClient } from './support/admin-client';
import { ClientCapture, startClientCapture } from './support/client-capture';
import { FakeAnthropic } from './support/fake-anthropic';
import { OwnGateway, startOwnGateway } from './support/own-gateway';
import { readmeBlock } from './support/readme-blocks';
import { CLAUDE, CliRun, CODEX, platform, README_GATEWAY, readmeLines, runLines, runnable } from './support/real-cli';

/**
 * The agent CLIs themselves (test/clients/package.json pins them) against a gateway on the embedded default
 * catalog (dev-echo), run from README.md's own lines ("Claude Code and the Codex CLI") with no model flag: the
 * answer, and a tool loop that dev-echo drives offline (DESIGN.md sections 11 and 12.3). A recording pass-through
 * between them keeps what they sent, printed when a test fails. (Claude Code's web search: claude-code-web-search.e2e-spec.ts.)
 */
const HEADER = 'x-gateway-ignored-params';
if (!runnable) {
  console.warn(`\n!!! test/real-clients: SKIPPED. Claude Code and the Codex CLI ship no binary for ${platform}; the real-client tests cannot run here. !!!\n`);
}

(runnable ? describe : describe.skip)('The real agent CLIs against the gateway on dev-echo, from the README (issues 32 and 43)', () => {
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
    // The shipped catalog (its `claude-*` and `gpt-*-sol` aliases of dev-echo), and an exact id that wins over them.
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
    // Not a git repository: the README's Codex line says what that takes.
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
    /** The README's lines in the shell where `KEY` is exported; `more` is environment a test adds (another model). */
    function claude(prompt: string, more: Record<string, string> = {}, lines = readmeLines('sh claude', capture.url, prompt)): Promise<CliRun> {
      return runLines(lines, { HOME: freshHome('claude'), KEY: key, ...more }, work);
    }

    it("runs the README's lines with no model flag: the default model it asks for is aliased to dev-echo", async () => {
      expect(readmeBlock('sh claude')).not.toMatch(/--model|ANTHROPIC_MODEL/);
      const run = await claude('say hi to the gateway');
      const sent = exchangesOn('/v1/messages', run);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('say hi to the gateway');
      // Claude Code's own default (claude-opus-5-5 in 2.1.332), served by dev-echo under the shipped `claude-*`.
      const models = new Set(sent.map((e) => e.body.model));
      for (const model of models) expect(model).toMatch(/^claude-(?!native$)/);
      expect(sent[0].responseStart).toContain('"model":"dev-echo"');
      expect(sent[0].headers.authorization).toBe(`Bearer ${key}`);
      // Its defaults: adaptive thinking and effort, context editing, a system-role entry among the messages; all served or named.
      expect(sent[0].body).toMatchObject({ thinking: expect.any(Object), output_config: expect.any(Object), stream: true });
      expect(sent[0].body.messages.some((m: any) => m.role === 'system')).toBe(true);
      expect(String(sent[0].responseHeaders[HEADER]).split(',')).toEqual(expect.arrayContaining(['thinking', 'output_config']));
    }, 150_000);

    it('takes the key as ANTHROPIC_API_KEY too (sent as x-api-key), as the README says', async () => {
      const lines = readmeLines('sh claude', capture.url, 'say hi by x-api-key').replace('ANTHROPIC_AUTH_TOKEN=', 'ANTHROPIC_API_KEY=');
      const run = await claude('', {}, lines);
      const [first] = exchangesOn('/v1/messages', run);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('say hi by x-api-key');
      expect(first.headers['x-api-key']).toBe(key);
    }, 150_000);

    it('runs a tool loop offline: dev-echo calls Read, Claude Code reads the file, its content ends in the output', async () => {
      const run = await claude(`call Read {"file_path": "${secretFile}"}`);
      const turns = exchangesOn('/v1/messages', run).filter((e) => Array.isArray(e.body?.tools) && e.body.tools.length > 0);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('The vault code is 4217-ORCHID.');
      expect(turns.every((e) => e.body.model !== 'dev-echo')).toBe(true);
      // The second turn carries the tool_result of the call dev-echo made.
      const results = turns.flatMap((e) => e.body.messages.flatMap((m: any) => (Array.isArray(m.content) ? m.content : []))).filter((b: any) => b.type === 'tool_result');
      expect(results.length).toBeGreaterThan(0);
    }, 150_000);

    it('runs against an `anthropic` model (exact id over the pattern): its body reaches Anthropic as sent, cache_control and thinking intact (issue 33)', async () => {
      anthropicFake.resetState();
      anthropicFake.reply = { text: 'Hello from Claude through the gateway.' };
      const run = await claude('say hi to Claude', { ANTHROPIC_MODEL: 'claude-native' });
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
  });

  describe('Codex CLI', () => {
    /** The README's config.toml in a fresh ~/.codex, then its `codex exec` line in the shell where `KEY` is exported. */
    function codex(prompt: string, lines = readmeLines('sh codex', capture.url, prompt)): Promise<CliRun> {
      const home = freshHome('codex');
      mkdirSync(join(home, '.codex'));
      writeFileSync(join(home, '.codex', 'config.toml'), readmeBlock('toml codex-config').replaceAll(README_GATEWAY, capture.url));
      return runLines(lines, { HOME: home, KEY: key }, work);
    }

    it("runs the README's config and line with no model: its default model is aliased, its additional_tools item served", async () => {
      expect(readmeBlock('toml codex-config')).not.toMatch(/^\s*model\s*=/m);
      expect(readmeBlock('sh codex')).not.toMatch(/ (-m|--model)[ =]/);
      const run = await codex('say hi to the gateway');
      const [first] = exchangesOn('/v1/responses', run);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('say hi to the gateway');
      // Codex's own default (gpt-6.2-sol in 0.171.0), served by dev-echo under the shipped `gpt-*-sol`.
      expect(first.body.model).toMatch(/^gpt-.*-sol$/);
      expect(first.responseStart).toContain('"model":"dev-echo"');
      expect(first.body).toMatchObject({ stream: true, store: false, include: ['reasoning.encrypted_content'] });
      // Its tools come in an input item, not in `tools`: served (200), nothing of it named as ignored.
      const offers = first.body.input.filter((item: any) => item.type === 'additional_tools');
      expect(offers).toHaveLength(1);
      expect(offers[0].tools.map((t: any) => t.type)).toContain('namespace');
      expect(String(first.responseHeaders[HEADER]).split(',')).toEqual(expect.arrayContaining(['include:reasoning.encrypted_content', 'client_metadata']));
    }, 150_000);

    it("stops outside a git repository without --skip-git-repo-check, as the README says", async () => {
      const lines = readmeLines('sh codex', capture.url, 'say hi').replace(' --skip-git-repo-check', '');
      const run = await codex('', lines);
      expect(run.code).not.toBe(0);
      expect(run.stderr).toContain('Not inside a trusted directory and --skip-git-repo-check was not specified');
      expect(capture.exchanges.filter((e) => e.path.startsWith('/v1/responses'))).toHaveLength(0);
    }, 150_000);

    it('runs a tool loop through its shell: dev-echo calls the exec tool of its additional_tools, Codex runs the command, the output ends in its answer', async () => {
      // `functions__exec`: the custom tool `exec` of the item's `functions` namespace, as the gateway offers it (docs/responses.md).
      const script = `text(await tools.exec_command({cmd: "cat ${secretFile}"}))`;
      const run = await codex(`call functions__exec ${JSON.stringify({ input: script })}`);
      const turns = exchangesOn('/v1/responses', run);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('The vault code is 4217-ORCHID.');
      const items = turns.flatMap((e) => (Array.isArray(e.body.input) ? e.body.input : []));
      expect(items).toContainEqual(expect.objectContaining({ type: 'custom_tool_call', name: 'exec', namespace: 'functions', input: script }));
      expect(items.filter((item: any) => item.type === 'custom_tool_call_output').length).toBeGreaterThan(0);
    }, 150_000);
  });
});
