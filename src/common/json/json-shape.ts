/** The bounds of a JSON body's shape (limits.json_body_max_depth and limits.json_body_max_keys). */
export interface JsonShapeLimits {
  maxDepth: number;
  maxKeys: number;
}

/** Which bound a body broke, if any. */
export type JsonShapeViolation = 'depth' | 'keys' | null;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** What a byte is to the scan: a table lookup, so that long numbers and literals cost little per byte. */
const enum Kind {
  Other = 0,
  Space,
  Quote,
  Open,
  Close,
  Comma,
}
const KINDS = new Uint8Array(256);
for (const space of [0x20, 0x09, 0x0a, 0x0d]) KINDS[space] = Kind.Space;
KINDS[QUOTE] = Kind.Quote;
KINDS[OPEN_BRACE] = KINDS[OPEN_BRACKET] = Kind.Open;
KINDS[CLOSE_BRACE] = KINDS[CLOSE_BRACKET] = Kind.Close;
KINDS[COMMA] = Kind.Comma;

/**
 * Measures a JSON text, as UTF-8 bytes, in one pass without recursion, and stops at the first bound
 * crossed: depth counts nested objects and arrays (the body itself is depth 1), keys count object
 * keys and array elements together over the whole body. It runs before JSON.parse, because parsing
 * an object of a few hundred thousand keys alone blocks the event loop for over 100 ms, and what
 * comes after (class-transformer, Object.values) costs more than linear time in them.
 *
 * The text is not validated here: an invalid one is measured as far as it goes and left to JSON.parse.
 * Structural characters are ASCII, which never occurs inside a multi-byte UTF-8 sequence.
 */
export function checkJsonShape(bytes: Uint8Array, limits: JsonShapeLimits): JsonShapeViolation {
  let depth = 0;
  let keys = 0;
  let containerJustOpened = false;
  for (let i = 0; i < bytes.length; i++) {
    const kind = KINDS[bytes[i]];
    if (kind === Kind.Space) continue;
    if (containerJustOpened) {
      containerJustOpened = false;
      // The first member of an object or array; later ones each follow a comma.
      if (kind !== Kind.Close && ++keys > limits.maxKeys) return 'keys';
    }
    if (kind === Kind.Other) continue;
    if (kind === Kind.Quote) {
      i = closingQuote(bytes, i);
    } else if (kind === Kind.Open) {
      if (++depth > limits.maxDepth) return 'depth';
      containerJustOpened = true;
    } else if (kind === Kind.Close) {
      depth--;
    } else if (++keys > limits.maxKeys) {
      return 'keys';
    }
  }
  return null;
}

/**
 * Where the string opened at `start` ends (its length when it never does). The search for quotes is
 * native; a quote preceded by an odd run of backslashes is escaped. Each run is looked at once.
 */
function closingQuote(bytes: Uint8Array, start: number): number {
  let at = start;
  for (;;) {
    at = bytes.indexOf(QUOTE, at + 1);
    if (at < 0) return bytes.length;
    let backslashes = 0;
    while (bytes[at - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
}
