import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GatewayMain } from './support/gateway-main';
import { testDatabaseUrl } from './support/test-app';

const ROOT = join(__dirname, '..');

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real entry point as an operator would, and waits for it to give up (killed after `timeoutMs`). */
async function runMain(env: Record<string, string>, timeoutMs = 150_000): Promise<Exit> {
  const gw = new GatewayMain({ DATABASE_URL: testDatabaseUrl(), LOG_LEVEL: 'silent', ...env });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      gw.signal('SIGKILL');
      reject(new Error(`the gateway did not exit within ${timeoutMs} ms\nstdout: ${gw.stdout}\nstderr: ${gw.stderr}`));
    }, timeoutMs);
  });
  try {
    const code = await Promise.race([gw.exited, timedOut]);
    return { code, stdout: gw.stdout, stderr: gw.stderr };
  } finally {
    clearTimeout(timer);
  }
}

// The cases run at once, each booting the built app (dist/src/main.js, ~1.5 s of CPU apiece); a loaded 2-core
// machine took over 30 s a case when each compiled the app under ts-node first.
jest.setTimeout(180_000);

describe('A bad configuration stops the process, naming the field', () => {
  // Made at collection time: jest starts concurrent tests before beforeAll hooks have run.
  const dir = mkdtempSync(join(tmpdir(), 'gateway-config-'));
  const shipped = readFileSync(join(ROOT, 'config/gateway.yaml'), 'utf8');

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function configFile(name: string, text: string): string {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  }

  // Each case boots the whole app (a second or two each); every other field is covered by
  // the unit specs of the loader and of readEnv.
  const cases: Array<[string, () => Record<string, string>, RegExp[]]> = [
    [
      'a negative price in the YAML file',
      () => ({ GATEWAY_CONFIG: configFile('price.yaml', shipped.replace('input_price_per_million: 0.5', 'input_price_per_million: -0.5')) }),
      [/price\.yaml/, /catalog\[0\]\.input_price_per_million/],
    ],
    [
      'a misspelt key',
      () => ({ GATEWAY_CONFIG: configFile('typo.yaml', shipped.replace('chat_burst:', 'chat_brust:')) }),
      [/limits\.chat_brust: unknown key/],
    ],
    [
      'a YAML syntax error',
      () => ({ GATEWAY_CONFIG: configFile('syntax.yaml', 'providers:\n  local: [type: local\ncatalog: {\n') }),
      [/syntax\.yaml: cannot read YAML/],
    ],
    [
      'an alias that is another model\'s id',
      () => ({ GATEWAY_CONFIG: configFile('alias.yaml', shipped.replace('aliases: [tts-1,', 'aliases: [dev-echo,')) }),
      [/alias\.yaml/, /catalog\[2\]\.aliases\[0\]: "dev-echo" is already the id of catalog\[0\]/],
    ],
    [
      'a provider key of another type (each type has its own keys)',
      () => ({ GATEWAY_CONFIG: configFile('provider-type.yaml', shipped.replace('    type: local\n', '    type: local\n    max_connections: 8\n')) }),
      [/provider-type\.yaml/, /providers\.local\.max_connections: unknown key/],
    ],
    ['a missing file', () => ({ GATEWAY_CONFIG: join(dir, 'absent.yaml') }), [/absent\.yaml: cannot read YAML/]],
    ['PORT=abc', () => ({ PORT: 'abc' }), [/PORT: must be an integer/]],
    ['a REDIS_URL that is not a redis URL', () => ({ REDIS_URL: 'localhost:6379' }), [/REDIS_URL: not a valid URL/]],
  ];

  it.concurrent.each(cases)('exits non-zero on %s', async (_name, env, expected) => {
    const exit = await runMain(env());
    expect(exit.code).not.toBe(0);
    expect(exit.code).not.toBeNull();
    expect(exit.stderr).toMatch(/^Gateway failed to start: /);
    for (const pattern of expected) expect(exit.stderr).toMatch(pattern);
    // A configuration problem is reported as such, not as a crash with a stack trace.
    expect(exit.stderr).not.toMatch(/\n\s+at /);
    expect(exit.stdout).not.toMatch(/listening/i);
  });
});
