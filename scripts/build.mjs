// Builds dist/ with `nest build` and stamps it with a hash of what went in and of what came out.
// `--if-changed` (npm start's prestart) builds only when a hash differs from the stamp: a source, an
// asset, a config or the dependencies changed, or dist/ is missing, partial or altered. Plain
// JavaScript, since it runs before any build exists (docs/operations.md, "Start-up and logs").
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist');
const STAMP = join(DIST, '.build-stamp.json');

/**
 * Everything `nest build` reads: src/ whole (the compiled files and nest-cli.json's assets, the SQL
 * functions and the dashboard's files), the compiler's and Nest's configs, the dependencies' versions
 * (type definitions, the compiler itself), and this script.
 */
const INPUTS = ['src', 'ormconfig.ts', 'tsconfig.json', 'tsconfig.build.json', 'nest-cli.json', 'package.json', 'package-lock.json', 'scripts/build.mjs'];

/** Every file under `path` (a file or a folder, followed through links), as paths relative to the project. */
function filesUnder(path) {
  let stat;
  try {
    stat = statSync(join(ROOT, path));
  } catch (err) {
    if (err.code === 'ENOENT') return [];
    throw err;
  }
  if (!stat.isDirectory()) return [path];
  return readdirSync(join(ROOT, path)).flatMap((name) => filesUnder(join(path, name)));
}

/** One hash of the files' names and contents (not their times: a checkout or a copy resets those). */
function hashOf(paths, except = []) {
  const hash = createHash('sha256');
  const files = paths.flatMap(filesUnder).filter((file) => !except.includes(file)).sort();
  for (const file of files) hash.update(`${file}\0${contentHash(file)}\n`);
  return hash.digest('hex');
}

/** A file's hash; one removed since it was listed (an editor saving by rename) counts as absent. */
function contentHash(file) {
  try {
    return createHash('sha256').update(readFileSync(join(ROOT, file))).digest('hex');
  } catch (err) {
    if (err.code === 'ENOENT') return 'absent';
    throw err;
  }
}

const hashOfDist = () => hashOf(['dist'], [relative(ROOT, STAMP)]);

function readStamp() {
  try {
    return JSON.parse(readFileSync(STAMP, 'utf8'));
  } catch {
    return null;
  }
}

/** Why dist/ must be built again, or null when it is the build of these inputs, untouched since. */
function staleness(inputs) {
  const stamp = readStamp();
  if (!stamp) return 'no finished build in dist/';
  if (stamp.inputs !== inputs) return 'the sources changed since the last build';
  if (stamp.outputs !== hashOfDist()) return 'dist/ changed since the last build';
  return null;
}

function build(reason) {
  console.log(`Building dist/ (nest build): ${reason}`);
  // Gone first, so that a build that fails or is interrupted leaves no stamp and the next start builds again.
  rmSync(STAMP, { force: true });
  const nest = createRequire(join(ROOT, 'package.json')).resolve('@nestjs/cli/bin/nest.js');
  const { status, signal } = spawnSync(process.execPath, [nest, 'build'], { cwd: ROOT, stdio: 'inherit' });
  return signal ? 1 : (status ?? 1);
}

function main() {
  // Hashed before building: a file saved during the build leaves the stamp behind, and the next start builds it.
  const inputs = hashOf(INPUTS);
  const reason = process.argv.includes('--if-changed') ? staleness(inputs) : 'npm run build';
  if (reason === null) {
    console.log('dist/ is up to date with the sources: no build');
    return 0;
  }
  const status = build(reason);
  if (status !== 0) return status;
  writeFileSync(`${STAMP}.tmp`, `${JSON.stringify({ inputs, outputs: hashOfDist() })}\n`);
  renameSync(`${STAMP}.tmp`, STAMP);
  return 0;
}

process.exitCode = main();
