// `npm run test:runtime`: jest over exactly the spec files that test/runtime-specs.txt names (a file, or a
// folder for every spec under it), the ones CI runs again on Node.js 22 and 24 (.ci/run). An entry that names
// nothing stops the run before jest starts, so a renamed or moved spec cannot drop out of the job unseen.
// Further arguments go to jest (`npm run test:runtime -- --listTests`).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const LIST = 'test/runtime-specs.txt';

/** What jest.config.js's projects run: unit specs under src/, end-to-end specs under test/. */
const isSpec = (path) => (path.startsWith('src/') && path.endsWith('.spec.ts')) || (path.startsWith('test/') && path.endsWith('.e2e-spec.ts'));

function specsUnder(path) {
  if (!statSync(join(ROOT, path)).isDirectory()) return [path];
  return readdirSync(join(ROOT, path), { withFileTypes: true })
    .flatMap((entry) => specsUnder(relative(ROOT, join(ROOT, path, entry.name))))
    .sort();
}

const entries = readFileSync(join(ROOT, LIST), 'utf8')
  .split('\n')
  .map((line) => line.replace(/#.*/, '').trim())
  .filter(Boolean);
const problems = [];
const files = new Set();
for (const entry of entries) {
  const path = entry.replace(/\/+$/, '');
  if (!existsSync(join(ROOT, path))) {
    problems.push(`${entry}: no such file or folder`);
    continue;
  }
  const specs = specsUnder(path).filter(isSpec);
  if (specs.length === 0) problems.push(`${entry}: not a spec file, nor a folder with one`);
  for (const spec of specs) files.add(spec);
}
if (problems.length > 0) {
  console.error(`${LIST} names what is not there (renamed or moved? update the list):\n  ${problems.join('\n  ')}`);
  process.exit(1);
}

console.log(`test:runtime: ${files.size} spec files from ${LIST}, on Node.js ${process.version}`);
const jest = createRequire(join(ROOT, 'package.json')).resolve('jest/bin/jest');
const { status, signal } = spawnSync(process.execPath, [jest, '--runInBand', '--runTestsByPath', ...files, ...process.argv.slice(2)], {
  cwd: ROOT,
  stdio: 'inherit',
});
process.exit(status ?? (signal ? 1 : 0));
