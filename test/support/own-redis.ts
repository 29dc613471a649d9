import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createConnection } from 'node:net';
import { freePort } from './free-port';

/**
 * A redis-server of a test's own, on a free port, that the test may SIGKILL and start again on the
 * same port: the fault tests take Redis away for real. Nothing is persisted (--save "", no AOF), so a
 * restarted server is empty, as after a crash without persistence.
 */
export interface OwnRedis {
  /** redis://127.0.0.1:<port> */
  url: string;
  port: number;
  /** SIGKILL of the server; resolves once the process has exited. Clients see their sockets closed. */
  kill(): Promise<void>;
  /** Starts it again on the same port (after kill or stop); resolves once it answers PING. */
  restart(): Promise<void>;
  /** SIGSTOP: the server keeps its sockets open but answers nothing (a hung Redis). */
  pause(): void;
  /** SIGCONT after pause(). */
  resume(): void;
  /** The server's pid, or null while it is down. */
  pid(): number | null;
  /** Stops it for good (SIGKILL if running). */
  stop(): Promise<void>;
}

export async function startOwnRedis(): Promise<OwnRedis> {
  if (!redisServerInstalled()) throw new Error('redis-server is not installed (Debian package redis-server): this test starts one of its own');
  const port = await freePort();
  let child: ChildProcess | null = null;

  const start = async (): Promise<void> => {
    const started = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    started.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child = started;
    const exited = once(started, 'exit').then(() => {
      throw new Error(`redis-server on port ${port} exited at start: ${stderr}`);
    });
    await Promise.race([waitUntilAnswering(port), exited]);
    exited.catch(() => undefined);
  };
  const kill = async (): Promise<void> => {
    const running = child;
    child = null;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = once(running, 'exit');
    running.kill('SIGKILL');
    await exited;
  };

  // A test run that ends without stop() must not leave the server behind.
  const killOnExit = () => child?.kill('SIGKILL');
  process.on('exit', killOnExit);

  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    kill,
    async restart() {
      await kill();
      await start();
    },
    pause: () => child?.kill('SIGSTOP'),
    resume: () => child?.kill('SIGCONT'),
    pid: () => child?.pid ?? null,
    async stop() {
      process.off('exit', killOnExit);
      await kill();
    },
  };
}

/** Whether a `redis-server` binary runs here (Debian's package `redis-server`; .ci/run installs it). */
export function redisServerInstalled(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** A Redis that a test talks to (and does not break). */
export interface TestRedis {
  url: string;
  /** Stops the server if it is the test's own; leaves a REDIS_URL server alone. */
  stop(): Promise<void>;
}

/**
 * The Redis of a spec that needs one to talk to: a redis-server of its own when the binary is installed
 * (nothing shared with other runs, nothing left behind, no Redis need be running), else the server that
 * REDIS_URL names (keys unique to the test). With neither, `skip` holds the reason, already printed in one
 * line naming the spec: the caller skips its Redis tests with it (`(redis.skip ? it.skip : it)(…)`).
 */
export function redisForTests(spec: string): { skip: string | null; start(): Promise<TestRedis> } {
  const url = process.env.REDIS_URL;
  if (redisServerInstalled()) {
    return {
      skip: null,
      start: async () => {
        const own = await startOwnRedis();
        return { url: own.url, stop: () => own.stop() };
      },
    };
  }
  if (url) return { skip: null, start: async () => ({ url, stop: async () => undefined }) };
  const skip = "no redis-server binary on PATH and no REDIS_URL (install Debian's redis-server or set REDIS_URL)";
  console.warn(`${spec}: Redis tests SKIPPED: ${skip}`);
  return {
    skip,
    start: () => Promise.reject(new Error(`${spec}: ${skip}`)),
  };
}

/** Resolves once a PING on the port gets +PONG (a fresh connection each try). */
async function waitUntilAnswering(port: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await pings(port))) {
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer PING within 10 s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function pings(port: number): Promise<boolean> {
  return new Promise((resolvePromise) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    const done = (ok: boolean) => {
      socket.destroy();
      resolvePromise(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => done(data.toString().startsWith('+PONG')));
  });
}

