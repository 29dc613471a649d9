import { ChildProcess, spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { GATEWAY_COMMAND } from './built-gateway';
import { exitWithOutput } from './child-exit';

const REPO_ROOT = resolve(__dirname, '../..');
const OUTPUT_KEPT_CHARS = 64 * 1024;
const START_TIMEOUT_MS = 60_000;

export interface GatewayProcessOptions {
  name: string;
  env: Record<string, string>;
  /** Where all of its output is written as well (the buffer keeps only the end). */
  logFile: string;
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * One gateway replica as a separate process (the built `dist/src/main.js`), as an operator runs it:
 * its own event loop, its own pools, so that a fault which ends it cannot hide behind the test's process.
 * Its stdout and stderr are kept (the last 64 KiB, and all of it in `logFile`) to explain a failing test.
 */
export class GatewayProcess {
  /** e.g. http://127.0.0.1:41234 (no /v1); set once it listens. */
  url = '';
  exit: ExitStatus | null = null;
  private output = '';
  private readonly child: ChildProcess;
  private readonly exited: Promise<ExitStatus>;

  constructor(readonly options: GatewayProcessOptions) {
    const [command, args] = GATEWAY_COMMAND;
    this.child = spawn(command, args, {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout!.on('data', (chunk: Buffer) => this.keep(chunk.toString('utf8')));
    this.child.stderr!.on('data', (chunk: Buffer) => this.keep(chunk.toString('utf8')));
    this.child.once('exit', (code, signal) => (this.exit = { code, signal }));
    // Resolves once its output is read to the end too, so that a log read after a stop or a kill is whole.
    this.exited = exitWithOutput(this.child).then((status) => {
      this.keep(`\n[process exited: code ${status.code}, signal ${status.signal}]\n`);
      return status;
    });
  }

  get name(): string {
    return this.options.name;
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get alive(): boolean {
    return this.exit === null;
  }

  /** Resolves with the base URL once `main.ts` prints its listening line. */
  async ready(): Promise<string> {
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      const match = /Gateway listening on http:\/\/localhost:(\d+)\/v1/.exec(this.output);
      if (match) {
        this.url = `http://127.0.0.1:${match[1]}`;
        return this.url;
      }
      if (this.exit) throw new Error(`${this.name} exited before listening:\n${this.tail()}`);
      if (Date.now() > deadline) throw new Error(`${this.name} did not listen within ${START_TIMEOUT_MS} ms:\n${this.tail()}`);
      await sleep(25);
    }
  }

  /** SIGKILL: the replica dies without a chance to give anything back. */
  async kill9(): Promise<ExitStatus> {
    if (this.alive) this.child.kill('SIGKILL');
    return this.exited;
  }

  /** SIGTERM (graceful), then SIGKILL if it has not ended within `graceMs`. */
  async stop(graceMs = 5000): Promise<ExitStatus> {
    if (!this.alive) return this.exited;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** The last lines it wrote (stdout and stderr interleaved). */
  tail(chars = 8000): string {
    return this.output.slice(-chars);
  }

  private keep(text: string): void {
    appendFileSync(this.options.logFile, text);
    this.output += text;
    if (this.output.length > OUTPUT_KEPT_CHARS * 2) this.output = this.output.slice(-OUTPUT_KEPT_CHARS);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
