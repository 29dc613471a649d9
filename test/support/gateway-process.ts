import { ChildProcess, spawn } from 'node:child_process';

/**
 * A gateway in a child process of its own (its own process group, so that `npm start`, its shell and
 * node all get the signal), with its output kept for assertions.
 */
export class GatewayProcess {
  stdout = '';
  stderr = '';
  readonly exited: Promise<number | null>;
  private exitCode: number | null | undefined;
  private readonly child: ChildProcess;

  constructor(command: string, args: string[], options: { cwd: string; env: Record<string, string> }) {
    this.child = spawn(command, args, { cwd: options.cwd, env: options.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (d) => (this.stdout += d));
    this.child.stderr!.on('data', (d) => (this.stderr += d));
    this.exited = new Promise((resolve) =>
      this.child.on('exit', (code) => {
        this.exitCode = code;
        resolve(code);
      }),
    );
  }

  /** The first match of `pattern` in stdout; fails when the process exits or the time passes first. */
  async waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = this.stdout.match(pattern);
      if (match) return match;
      if (this.exitCode !== undefined || Date.now() > deadline) {
        throw new Error(`no ${pattern} (exit ${this.exitCode})\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Signals the whole process group; SIGTERM lets the gateway stop its embedded PostgreSQL. */
  signal(signal: NodeJS.Signals): void {
    if (this.exitCode === undefined && this.child.pid) process.kill(-this.child.pid, signal);
  }
}
