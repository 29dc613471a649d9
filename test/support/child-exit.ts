import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';

/** How long after its exit a child's pipes may stay open: a grandchild may hold them (embedded PostgreSQL). */
const DRAIN_AFTER_EXIT_MS = 2_000;

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * Resolves once the child has exited and what it wrote to its piped stdout and stderr has been read.
 * 'exit' alone can fire before the last chunks of a pipe arrive (seen in CI on a loaded machine: a start
 * failure's one stderr line read as ""); 'close' alone never fires while a grandchild keeps a pipe open.
 */
export async function exitWithOutput(child: ChildProcess): Promise<ChildExit> {
  const ended = [child.stdout, child.stderr].filter((s) => s !== null).map((s) => (s.readableEnded ? Promise.resolve() : once(s, 'end').then(() => undefined, () => undefined)));
  const [code, signal] = (child.exitCode !== null || child.signalCode !== null ? [child.exitCode, child.signalCode] : await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([Promise.all(ended), new Promise((r) => (timer = setTimeout(r, DRAIN_AFTER_EXIT_MS)))]);
  clearTimeout(timer);
  return { code, signal };
}
