import { ChildProcess, spawn } from 'node:child_process';
import { UpstreamFailure } from '../upstream-failure';

/** Debian package of each engine binary, for the message when it is missing. */
const PACKAGES: Record<string, string> = {
  ffmpeg: 'ffmpeg',
  'espeak-ng': 'espeak-ng',
  pocketsphinx_continuous: 'pocketsphinx',
};

export interface ProcessOptions {
  signal: AbortSignal;
  timeoutMs: number;
  stdin?: Buffer | string;
}

/**
 * Starts an engine binary without a shell; it is killed when the request aborts or the timeout passes.
 * `done` resolves with its stderr once it exits with 0, and rejects with the UpstreamFailure to report otherwise.
 */
export function startEngine(command: string, args: string[], options: ProcessOptions): { child: ChildProcess; done: Promise<string> } {
  // An explicit env makes the binary lookup follow process.env.PATH as this code sees it (jest sandboxes it).
  const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], env: process.env });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    if (stderr.length < 4096) stderr += chunk.toString('utf8');
  });
  // A pipe to a child that died (EPIPE, ECONNRESET) fails its streams; the exit status tells the story.
  for (const pipe of [child.stdin, child.stdout, child.stderr]) pipe?.on('error', () => undefined);
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  const timer = setTimeout(kill, options.timeoutMs);
  options.signal.addEventListener('abort', kill, { once: true });
  const done = new Promise<string>((resolve, reject) => {
    // Not `once`: a spawn failure and a failed kill can both emit 'error', and a second one unheard would end the process.
    child.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      options.signal.removeEventListener('abort', kill);
      if (err.code === 'ENOENT') {
        reject(new UpstreamFailure('engine_missing', `${command} is not installed (Debian package ${PACKAGES[command] ?? command}).`));
      } else {
        reject(new UpstreamFailure('server_error', `${command} could not run: ${err.message}`));
      }
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      options.signal.removeEventListener('abort', kill);
      if (code === 0) resolve(stderr);
      else if (signal && !options.signal.aborted) reject(new UpstreamFailure('timeout', `${command} did not finish within ${options.timeoutMs} ms.`));
      else reject(new UpstreamFailure('server_error', `${command} failed (${signal ?? `exit ${code}`}): ${stderr.trim().split('\n').slice(-3).join(' ')}`));
    });
  });
  if (options.stdin !== undefined) child.stdin!.end(options.stdin);
  return { child, done };
}

/** Runs a binary to completion and returns its standard output. */
export async function runEngine(command: string, args: string[], options: ProcessOptions): Promise<string> {
  const { child, done } = startEngine(command, args, options);
  const chunks: Buffer[] = [];
  child.stdout!.on('data', (chunk: Buffer) => chunks.push(chunk));
  await done;
  return Buffer.concat(chunks).toString('utf8');
}
