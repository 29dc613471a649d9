import { spawnSync } from 'node:child_process';
import { appendFileSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

jest.setTimeout(120_000);

const ROOT = join(__dirname, '..');
/** What the build reads from the project: its configs and dependencies as they are, and the script under test. */
const COPIED = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'nest-cli.json', 'scripts/build.mjs'];
const BUILT = /^Building dist\/ \(nest build\): (.+)$/m;
const UP_TO_DATE = /^dist\/ is up to date with the sources: no build$/m;

/**
 * `npm start` and `npm run build` in a small project of their own: the repository's package.json, configs,
 * dependencies and build script around a two-file program, so that the real nest build runs (a few
 * seconds) while the repository's own dist/, which other suites start, stays as it is.
 */
describe('npm start builds dist/ only when what goes into it changed', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-rebuild-'));
  const path = (file: string) => join(dir, file);
  const write = (file: string, text: string) => (mkdirSync(dirname(path(file)), { recursive: true }), writeFileSync(path(file), text));

  beforeAll(() => {
    for (const file of COPIED) {
      mkdirSync(dirname(path(file)), { recursive: true });
      copyFileSync(join(ROOT, file), path(file));
    }
    symlinkSync(join(ROOT, 'node_modules'), path('node_modules'));
    write('src/greeting.ts', `export const greeting = 'hello';\n`);
    write('src/main.ts', `import { greeting } from './greeting';\nconsole.log(\`says \${greeting}\`);\n`);
    write('src/database/functions/f.sql', 'SELECT 1;\n');
    write('src/dashboard/assets/app.css', 'body {}\n');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function npm(...args: string[]): { status: number | null; out: string } {
    const run = spawnSync('npm', args, { cwd: dir, encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root' } });
    return { status: run.status, out: run.stdout + run.stderr };
  }

  /** `npm start`'s output, whether it built and why, and what the program it started printed. */
  function start(): { built: string | null; says: string | undefined; status: number | null; out: string } {
    const { status, out } = npm('start');
    const built = BUILT.exec(out)?.[1] ?? null;
    if (!built) expect(out).toMatch(UP_TO_DATE);
    return { built, says: /^says (.*)$/m.exec(out)?.[1], status, out };
  }

  it('a first start builds; the next one, with nothing changed, runs what is built without calling nest', () => {
    expect(start()).toMatchObject({ built: 'no finished build in dist/', says: 'hello', status: 0 });
    expect(existsSync(path('dist/src/database/functions/f.sql'))).toBe(true);
    expect(existsSync(path('dist/src/dashboard/assets/app.css'))).toBe(true);

    const again = start();
    expect(again).toMatchObject({ built: null, says: 'hello', status: 0 });
    expect(again.out).not.toMatch(/nest build/);
  });

  it('new times on the same contents (a checkout, a copy) build nothing', () => {
    const later = new Date(Date.now() + 60_000);
    utimesSync(path('src/greeting.ts'), later, later);
    expect(start()).toMatchObject({ built: null, says: 'hello' });
  });

  it('a changed source file, an added one and a removed one each build', () => {
    write('src/greeting.ts', `export const greeting = 'changed';\n`);
    expect(start()).toMatchObject({ built: 'the sources changed since the last build', says: 'changed' });

    write('src/extra.ts', `export const extra = 1;\n`);
    expect(start().built).toBe('the sources changed since the last build');
    expect(existsSync(path('dist/src/extra.js'))).toBe(true);

    rmSync(path('src/extra.ts'));
    expect(start().built).toBe('the sources changed since the last build');
    // Nothing stale is left behind (nest-cli.json's deleteOutDir).
    expect(existsSync(path('dist/src/extra.js'))).toBe(false);
  });

  it('a changed asset (a SQL function) or a changed dependency list builds', () => {
    write('src/database/functions/f.sql', 'SELECT 2;\n');
    expect(start().built).toBe('the sources changed since the last build');
    expect(readFileSync(path('dist/src/database/functions/f.sql'), 'utf8')).toBe('SELECT 2;\n');

    appendFileSync(path('package-lock.json'), '\n');
    expect(start().built).toBe('the sources changed since the last build');
    expect(start().built).toBeNull();
  });

  it('a partial or missing dist/ builds', () => {
    rmSync(path('dist/src/greeting.js'));
    expect(start()).toMatchObject({ built: 'dist/ changed since the last build', says: 'changed' });

    rmSync(path('dist'), { recursive: true });
    expect(start()).toMatchObject({ built: 'no finished build in dist/', says: 'changed' });
  });

  it('after a failed build the next start builds again, even with the sources back as they were built', () => {
    const good = readFileSync(path('src/greeting.ts'), 'utf8');
    write('src/greeting.ts', `export const greeting: number = 'not a number';\n`);
    const failed = start();
    expect(failed.built).toBe('the sources changed since the last build');
    expect(failed.status).not.toBe(0);
    expect(failed.says).toBeUndefined();

    write('src/greeting.ts', good);
    expect(start()).toMatchObject({ built: 'no finished build in dist/', says: 'changed', status: 0 });
    expect(start().built).toBeNull();
  });

  it('npm run build always builds', () => {
    const { status, out } = npm('run', 'build');
    expect(status).toBe(0);
    expect(BUILT.exec(out)?.[1]).toBe('npm run build');
    expect(start().built).toBeNull();
  });
});
