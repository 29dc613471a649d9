/**
 * The tokenizer of the native fakes (fake-anthropic.ts, fake-gemini.ts, fake-bedrock.ts), deterministic and easy to
 * reckon by hand: one token per run of letters, digits and `_` (any script), and one per other non-space character;
 * whitespace is free. `"Hello, world!"` is 4 tokens. It is no provider's tokenizer (Claude's and Gemini's are not
 * public); tests compare the gateway against the fakes' figures.
 */
export function fakeTokenCount(text: string): number {
  return text.match(TOKEN_RE)?.length ?? 0;
}
const TOKEN_RE = /[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu;

/** The same tokens with the whitespace before each: the pieces concatenate back to the text (trailing whitespace goes to the last). */
export function tokenPieces(text: string): string[] {
  const pieces: string[] = [...(text.match(/\s*(?:[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_])/gu) ?? [])];
  const rest = text.slice(pieces.join('').length);
  if (rest) {
    if (pieces.length) pieces[pieces.length - 1] += rest;
    else pieces.push(rest);
  }
  return pieces;
}

/** The text in pieces of `perPiece` tokens each (how streamed deltas cut it). */
export function tokenGroups(text: string, perPiece: number): string[] {
  const pieces = tokenPieces(text);
  const out: string[] = [];
  for (let i = 0; i < pieces.length; i += perPiece) out.push(pieces.slice(i, i + perPiece).join(''));
  return out;
}

/**
 * The tool calls of a reply that fit in `budget` output tokens (each its name and its JSON input), in order, up to the
 * first that does not: what a native fake sends when max_tokens cuts an answer.
 */
export function fitToolCalls<T extends { name: string; input: unknown }>(calls: T[], budget: number): { fitted: T[]; left: number; cut: boolean } {
  const fitted: T[] = [];
  let left = budget;
  for (const call of calls) {
    const n = fakeTokenCount(call.name) + fakeTokenCount(JSON.stringify(call.input));
    if (n > left) return { fitted, left, cut: true };
    left -= n;
    fitted.push(call);
  }
  return { fitted, left, cut: false };
}
