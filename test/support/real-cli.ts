import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { readmeBlock } from './readme-blocks';

/**
 * Running the agent CLIs themselves (test/clients/package.json pins them) from README.md's own lines, for
 * test/real-clients.e2e-spec.ts and test/claude-code-web-search.e2e-spec.ts (DESIGN.md sections 11 and 12.3).
 */

export const CLIENTS = join(__dirname, '..', 'clients', 'node_modules', '.bin');
export const CLAUDE = join(CLIENTS, 'claude');
export const CODEX = join(CLIENTS, 'codex');
/** What the README's lines say the reader changes: where the gateway listens (a test's is on a free port), and the prompt. */
export const README_GATEWAY = 'http://localhost:8080';
export const README_PROMPT = '"say hi to the gateway"';
/** The platforms whose binaries the two npm packages ship (their optional dependencies). */
const SHIPPED = ['linux-x64', 'linux-arm64', 'darwin-x64', 'darwin-arm64', 'win32-x64', 'win32-arm64'];
export const platform = `${process.platform}-${process.arch}`;
/** Whether the CLIs can run here; a spec that needs them is skipped, and says so, where they cannot. */
export const runnable = SHIPPED.includes(platform);

/** What a CLI run printed and how it ended. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The prompt as a reader puts it in the README's quotes: one shell word, whatever it holds. */
export function shellWord(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/** The README's shell lines of `info` (`sh claude`, `sh codex`) with the gateway's address and the prompt put in. */
export function readmeLines(info: string, gatewayUrl: string, prompt: string): string {
  const lines = readmeBlock(info);
  if (!lines.includes(README_PROMPT)) throw new Error(`README.md's \`\`\`${info} block no longer says ${README_PROMPT}`);
  return lines.replaceAll(README_GATEWAY, gatewayUrl).replace(README_PROMPT, shellWord(prompt));
}

/**
 * Runs shell lines in bash with no stdin and only the given environment (the clients' binaries first on PATH, as
 * a global install puts them), killed with their process group after `timeoutMs`.
 */
export function runLines(lines: string, env: Record<string, string>, cwd: string, timeoutMs = 120_000): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const PATH = `${CLIENTS}:${process.env.PATH ?? '/usr/bin:/bin'}`;
    const child = spawn('bash', ['-eu', '-c', lines], { cwd, env: { PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
