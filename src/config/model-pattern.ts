/** The wildcard of a catalog alias pattern: any run of characters, the empty one included. */
export const WILDCARD = '*';

/** Whether a catalog alias is a pattern (`claude-*`) rather than an exact name. */
export function isModelPattern(alias: string): boolean {
  return alias.includes(WILDCARD);
}

/**
 * A catalog alias with `*` wildcards, anchored at both ends (`claude-*` matches `claude-opus-5-5`, not
 * `my-claude-x`). Matched without a regular expression: the literal runs between the wildcards are found left to
 * right, each at its first place after the previous one (the leftmost place is never worse for the rest), so the
 * cost is linear in the client's name per run, whatever the name holds.
 */
export class ModelPattern {
  private readonly runs: readonly string[];

  constructor(readonly text: string) {
    this.runs = text.split(WILDCARD);
  }

  matches(name: string): boolean {
    const { runs } = this;
    if (runs.length === 1) return name === runs[0];
    const head = runs[0];
    const tail = runs[runs.length - 1];
    const end = name.length - tail.length;
    if (end < head.length || !name.startsWith(head) || !name.endsWith(tail)) return false;
    let at = head.length;
    for (let i = 1; i < runs.length - 1; i++) {
      const found = name.indexOf(runs[i], at);
      if (found < 0 || found + runs[i].length > end) return false;
      at = found + runs[i].length;
    }
    return true;
  }

  /** The same pattern as an SQL `LIKE` pattern (backslash the escape): `%` for each wildcard, `%`, `_` and `\` literal. */
  sqlLike(): string {
    return this.runs.map((run) => run.replace(/[\\%_]/g, '\\$&')).join('%');
  }
}

/** What is wrong with an alias pattern, if anything (the alphabet is the schema's check). */
export function patternProblem(alias: string): string | undefined {
  if (alias.includes(WILDCARD + WILDCARD)) return 'holds ** (one * already matches any run of characters)';
  return undefined;
}
