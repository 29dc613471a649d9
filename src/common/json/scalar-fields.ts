/**
 * The named own fields of a JSON object, ready for class-transformer and class-validator: a field
 * holding an object or array is replaced by an empty one of the same kind. The DTOs that still use
 * class-validator (admin bodies, queries: StrictValidationPipe) hold scalars in these fields, so the verdict ("must be an integer", "must be a string") is
 * the same, while class-transformer, whose copy of an untyped object costs time quadratic in its
 * keys and trips over keys such as "constructor", only ever copies empty containers.
 */
export function scalarFields(source: Record<string, unknown>, names: readonly string[]): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const name of names) {
    if (!Object.prototype.hasOwnProperty.call(source, name)) continue;
    const value = source[name];
    if (value !== undefined) picked[name] = emptied(value);
  }
  return picked;
}

/** A JSON value with any contents dropped: scalars as they are, objects and arrays empty. */
function emptied(value: unknown): unknown {
  if (Array.isArray(value)) return [];
  if (typeof value === 'object' && value !== null) return {};
  return value;
}

export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
