import { O200K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/cjs/encodingParams/constants';

/**
 * Longest piece given to byte-pair encoding, in UTF-16 code units. BPE merging costs the square of a
 * piece's length, so a longer pre-tokenizer piece (only hostile or binary-like text has one: the longest
 * in this repository's docs, code and lock file is under 100; markdown table rules in node_modules reach
 * ~800) is encoded in slices of this length, which keeps counting linear in the text.
 */
export const MAX_PIECE_LENGTH = 512;

/**
 * The pieces o200k's pre-tokenizer splits a text into (the regex of gpt-tokenizer, as tiktoken's),
 * each longer one cut into slices of at most MAX_PIECE_LENGTH code units that never split a surrogate pair.
 * Ordinary text comes out unchanged, piece by piece, so its count is the reference count.
 */
export function* tokenPieces(text: string): Generator<string> {
  for (const [piece] of text.matchAll(O200K_TOKEN_SPLIT_REGEX)) {
    if (piece.length <= MAX_PIECE_LENGTH) {
      yield piece;
      continue;
    }
    for (let start = 0; start < piece.length; ) {
      const end = sliceEnd(piece, start);
      yield piece.slice(start, end);
      start = end;
    }
  }
}

function sliceEnd(piece: string, start: number): number {
  const end = Math.min(start + MAX_PIECE_LENGTH, piece.length);
  return end < piece.length && isHighSurrogate(piece.charCodeAt(end - 1)) ? end - 1 : end;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
