import type { Logger } from 'pino';
import { styleText } from 'node:util';
import { LogFormat } from '../config/env';

/** What fsync answers on a descriptor that has nothing to sync (a pipe, a terminal, a socket). */
const FSYNC_UNSUPPORTED = new Set(['EINVAL', 'ENOTSUP', 'EROFS']);

export interface StartFacts {
  /** The API's base URL, `http://localhost:<port>/v1`. */
  base: string;
  /** The generated admin token, on the one start that shows it. */
  adminToken?: string | null;
  /** The demo account, on the one start that shows its key. */
  demo?: { accountId: string; key: string } | null;
  /** Where the embedded PostgreSQL keeps its data, when DATABASE_URL is unset. */
  embedded?: { dataDir: string; port: number } | null;
}

/**
 * What a person needs once the gateway listens: the URL, the credentials created by this start, and
 * where to go next. On a terminal (pretty format) it is a framed block written before any log line
 * that follows; in the JSON format it is JSON lines like every other line of stdout, at info level
 * even when LOG_LEVEL is higher, so that a log collector keeps them and `grep "Demo API key"` finds them.
 * Resolves once the lines have left the process (the caller then forgets the secrets).
 */
export async function announceStart(facts: StartFacts, format: LogFormat, logger: Logger): Promise<void> {
  const lines = startLines(facts);
  if (format === 'json') {
    // Whatever LOG_LEVEL says: a token shown once must be shown.
    const announcer = logger.child({}, { level: 'info' });
    for (const [, text] of lines) announcer.info(text);
    // The JSON destination buffers (docs/performance.md): written out now, not at the next block. Its flush
    // ends with an fsync, which a pipe or a terminal refuses (EINVAL) once the lines are written.
    await new Promise<void>((resolve, reject) =>
      logger.flush((err) => (err && !FSYNC_UNSUPPORTED.has((err as NodeJS.ErrnoException).code ?? '') ? reject(err) : resolve())),
    );
    return;
  }
  const rule = '─'.repeat(Math.min(96, Math.max(...lines.map(([, text]) => text.length)) + 2));
  const colour = Boolean(process.stdout.isTTY) && !process.env.NO_COLOR;
  const styled = lines.map(([emphasis, text]) => (colour && emphasis ? styleText('bold', text) : text));
  process.stdout.write(`\n${rule}\n${styled.map((line) => ` ${line}`).join('\n')}\n${rule}\n\n`);
}

/** [emphasised, text] in the order shown; the first four are the ones the README quotes. */
function startLines({ base, adminToken, demo, embedded }: StartFacts): Array<[boolean, string]> {
  const origin = base.replace(/\/v1$/, '');
  const lines: Array<[boolean, string]> = [[true, `Gateway listening on ${base}`]];
  if (adminToken) lines.push([true, `Admin token (shown once, keep it): ${adminToken}`]);
  if (demo) {
    lines.push([true, `Demo account ${demo.accountId}: $5.00 credits, 14-day trial`]);
    lines.push([true, `Demo API key (shown once, keep it): ${demo.key}`]);
  }
  lines.push([false, '']);
  if (demo) lines.push([false, `Next: README.md, "Try it" (export KEY=<the demo API key>, then curl ${base}/models)`]);
  const signIn = adminToken ? 'the admin token above' : 'ADMIN_TOKEN or the admin token printed at the first start; lost it: README.md, "Admin token"';
  lines.push([false, `Dashboard: ${origin}/dashboard (sign in with ${signIn})`]);
  lines.push([false, `API docs: ${origin}/docs`]);
  if (embedded) lines.push([false, `Database: embedded PostgreSQL, data in ${embedded.dataDir}, port ${embedded.port} (DATABASE_URL unset)`]);
  return lines;
}
