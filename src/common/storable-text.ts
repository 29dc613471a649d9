/**
 * Text PostgreSQL and the logs can hold as given: PostgreSQL `text` cannot store NUL, and a lone
 * UTF-16 surrogate has no UTF-8 form (it would be stored, or logged, as something else than was sent).
 */
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const UNSTORABLE_ALL = new RegExp(UNSTORABLE.source, 'g');

export function isStorableText(text: string): boolean {
  return !UNSTORABLE.test(text);
}

/**
 * Text as the client sent it, made storable and at most `maxLength` UTF-16 units long: NUL and lone
 * surrogates become U+FFFD, and a cut never splits a surrogate pair.
 */
export function storableText(text: string, maxLength: number): string {
  let cut = text.length > maxLength ? text.slice(0, maxLength) : text;
  if (cut.length < text.length && /[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  return cut.replace(UNSTORABLE_ALL, '\uFFFD');
}
