import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { preProcessFile } from 'typescript';

/** One import of one source file by another, both relative to the source root. */
export interface ImportEdge {
  from: string;
  to: string;
}

/** Every `.ts` file under `dir`, as paths relative to `root`; unit specs (`*.spec.ts`) are left out. */
export function sourceFiles(root: string, dir = root): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(root, path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [relative(root, path)] : [];
  });
}

/** The file an import names: `x.ts`, `x/index.ts`, or `x` itself (a JSON or asset file). */
function resolveImport(path: string): string {
  const candidates = [`${path}.ts`, join(path, 'index.ts'), path];
  return candidates.find((candidate) => existsSync(candidate) && statSync(candidate).isFile()) ?? path;
}

/**
 * The relative imports of the files under `root` (import, export … from, require, import()), as TypeScript
 * reads them, resolved to files; package imports are not edges.
 */
export function importEdges(root: string): ImportEdge[] {
  return sourceFiles(root).flatMap((file) => {
    const { importedFiles } = preProcessFile(readFileSync(join(root, file), 'utf8'), true, true);
    return importedFiles
      .map((imported) => imported.fileName)
      .filter((specifier) => specifier.startsWith('.'))
      .map((specifier) => ({ from: file, to: relative(root, resolveImport(resolve(root, dirname(file), specifier))) }))
      .filter((edge) => !edge.to.startsWith('..'));
  });
}

/** The top-level folder under the source root that a file belongs to; files at the root are one "(src root)". */
export function topFolder(file: string): string {
  const parts = file.split(sep);
  return parts.length === 1 ? '(src root)' : parts[0];
}

/**
 * Finer: `common/` is a shelf of separate cross-cutting parts, so each of its sub-folders counts alone.
 * Sub-folders of a feature (dto/, local/, migrations/) stay parts of that one feature.
 */
export function commonPartOrTopFolder(file: string): string {
  const parts = file.split(sep);
  return parts[0] === 'common' && parts.length > 2 ? `common/${parts[1]}` : topFolder(file);
}

/** Folder → the folders it imports, with the file-level edges behind each arrow. */
export type FolderGraph = Map<string, Map<string, ImportEdge[]>>;

export function folderGraph(edges: ImportEdge[], folderOf: (file: string) => string): FolderGraph {
  const graph: FolderGraph = new Map();
  for (const edge of edges) {
    const [from, to] = [folderOf(edge.from), folderOf(edge.to)];
    if (!graph.has(to)) graph.set(to, new Map());
    if (from === to) continue;
    const targets = graph.get(from) ?? new Map<string, ImportEdge[]>();
    graph.set(from, targets);
    targets.set(to, [...(targets.get(to) ?? []), edge]);
  }
  return graph;
}

/** The groups of two or more folders that import each other, directly or around a longer loop (Tarjan's strongly connected components). */
export function folderCycles(graph: FolderGraph): string[][] {
  const index = new Map<string, number>();
  const lowLink = new Map<string, number>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (folder: string): void => {
    index.set(folder, index.size);
    lowLink.set(folder, index.get(folder)!);
    stack.push(folder);
    for (const next of graph.get(folder)?.keys() ?? []) {
      if (!index.has(next)) {
        visit(next);
        lowLink.set(folder, Math.min(lowLink.get(folder)!, lowLink.get(next)!));
      } else if (stack.includes(next)) {
        lowLink.set(folder, Math.min(lowLink.get(folder)!, index.get(next)!));
      }
    }
    if (lowLink.get(folder) !== index.get(folder)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      group.push(member);
    } while (member !== folder);
    if (group.length > 1) cycles.push(group.sort());
  };
  for (const folder of graph.keys()) if (!index.has(folder)) visit(folder);
  return cycles;
}

/** Each pair of folders in one cycle, with the arrows inside that cycle and the files behind them, for a failure message. */
export function describeCycle(graph: FolderGraph, cycle: string[]): string {
  const pairs = cycle.flatMap((a, i) => cycle.slice(i + 1).map((b) => `${a} ⇄ ${b}`));
  const arrows = cycle.flatMap((from) =>
    [...(graph.get(from) ?? new Map<string, ImportEdge[]>())]
      .filter(([to]) => cycle.includes(to))
      .map(([to, edges]) => `  ${from} -> ${to}: ${edges.map((e) => `${e.from} imports ${e.to}`).join(', ')}`),
  );
  return [`folders that import each other: ${pairs.join('; ')}`, ...arrows].join('\n');
}
