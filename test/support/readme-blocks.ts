import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const PROJECT = join(__dirname, '..', '..');

/**
 * The README's fenced blocks whose info string is `info` (`js quickstart`, `sh try`, `toml codex-config`), in
 * order: what the tests run is what a reader copies (DESIGN.md section 12.3).
 */
export function readmeBlocks(info: string): string[] {
  return docBlocks('README.md', info);
}

/** The fenced blocks of `info` in a document of the project (`docs/configuration.md`), in order. */
export function docBlocks(file: string, info: string): string[] {
  const text = readFileSync(join(PROJECT, file), 'utf8');
  return [...text.matchAll(new RegExp(`^\`\`\`${info}\\n([\\s\\S]*?)^\`\`\`$`, 'gm'))].map((m) => m[1]);
}

/** The one README block of that info string; a test fails when the README has none, or several. */
export function readmeBlock(info: string): string {
  const blocks = readmeBlocks(info);
  if (blocks.length !== 1) throw new Error(`README.md has ${blocks.length} blocks \`\`\`${info}, not one`);
  return blocks[0];
}
