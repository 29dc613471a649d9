import { ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { request } from 'node:http';
import { Socket } from 'node:net';
import { join } from 'node:path';
import { GATEWAY_COMMAND } from './built-gateway';
import { exitWithOutput } from './child-exit';

const ROOT = join(__dirname, '../..');
const STARTUP_TIMEOUT_MS = 90_000;

export interface GatewayMainOptions {
  /** What to run in the project's folder; the built `dist/src/main.js` by default (e.g. `npm start`). */
  command?: [string, string[]];
  /** In a process group of its own, so that `signal` reaches npm, its shell and node alike. */
  processGroup?: boolean;
}

/** The real gateway (`dist/src/main.js`) in a child process, as `npm start` runs it, with only the environment given. */
export class GatewayMain {
  readonly child: ChildProcessWithoutNullStreams;
  readonly spawnedAt = Date.now();
  stdout = '';
  stderr = '';
  /** Resolves with the exit code once the process has ended. */
  readonly exited: Promise<number | null>;
  exitedAt: number | undefined;
  /** The process has exited and its output has been read to the end. */
  private drained = false;

  constructor(env: Record<string, string>, private readonly options: GatewayMainOptions = {}) {
    const [command, args] = options.command ?? GATEWAY_COMMAND;
    this.child = spawn(command, args, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', PORT: '0', ...env },
      detached: options.processGroup === true,
    });
    this.child.stdout.on('data', (d) => (this.stdout += d));
    this.child.stderr.on('data', (d) => (this.stderr += d));
    this.child.once('exit', () => (this.exitedAt = Date.now()));
    this.exited = exitWithOutput(this.child).then(({ code }) => {
      this.drained = true;
      return code;
    });
  }

  /** Resolves with the first match of `pattern` in stdout, failing if the process exits first. */
  async waitFor(pattern: RegExp, timeoutMs = STARTUP_TIMEOUT_MS): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = this.stdout.match(pattern);
      if (match) return match;
      if (this.drained || Date.now() > deadline) {
        throw new Error(`no ${pattern} (exit ${this.child.exitCode})\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The API's base URL once the gateway listens (the line reads the same in both log formats). */
  async started(timeoutMs = STARTUP_TIMEOUT_MS): Promise<string> {
    const [, base] = await this.waitFor(/Gateway listening on (http:\/\/localhost:\d+\/v1)/, timeoutMs);
    return base;
  }

  /** stdout's lines, each parsed as JSON (throws on the first line that is not). */
  jsonLines(): Record<string, unknown>[] {
    return this.stdout
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => {
        try {
          return JSON.parse(line) as Record<string, unknown>;
        } catch {
          throw new Error(`stdout line is not JSON: ${line}`);
        }
      });
  }

  /** Signals the gateway (its whole process group, when it has one of its own); SIGTERM lets it stop its embedded PostgreSQL. */
  signal(signal: NodeJS.Signals): void {
    if (!this.child.pid) return;
    if (this.options.processGroup) {
      // Even once npm has exited: what it left behind is still in its group.
      try {
        process.kill(-this.child.pid, signal);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
      }
      return;
    }
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
  }

  stop(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}

export function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
    socket.connect(port, '127.0.0.1');
  });
}

/** A POST whose body is sent in two parts, so the request is still in flight between them. */
export function slowPost(url: string, headers: Record<string, string>, first: string) {
  const target = new URL(url);
  let finish!: (rest: string) => void;
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request({ host: target.hostname, port: target.port, path: target.pathname, method: 'POST', headers }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.write(first);
    finish = (rest) => req.end(rest);
  });
  return { response, finish: (rest: string) => finish(rest) };
}
