/**
 * A parsed JSON value written in one canonical form, so that two texts of the same value give the same string:
 * every object's keys sorted, no spacing, numbers and strings as JSON.stringify writes what JSON.parse read (`1.0`,
 * `1` and `1e0` are one number; `"\u0041"` and `"A"` one string); arrays keep their order. The Idempotency-Key's
 * fingerprint (docs/idempotency.md).
 *
 * Linear in the value but for sorting each object's keys. JSON.stringify recurses once per level of nesting: the
 * bodies it is given were bounded by limits.json_body_max_depth (at most 1000) before they were parsed.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, sortedKeys) ?? 'null';
}

/**
 * Each object as a copy with its keys in sorted order. Object.fromEntries defines the keys as own properties (a
 * `__proto__` key stays a key). Keys that are array indices ("2", "10") come first in numeric order whatever the
 * insertion order (JavaScript's own property order): still one order for one set of keys.
 */
function sortedKeys(_key: string, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const object = value as Record<string, unknown>;
  return Object.fromEntries(Object.keys(object).sort().map((key) => [key, object[key]]));
}
