/** The bounds of a parsed JSON body's shape (limits.json_body_max_depth and limits.json_body_max_keys). */
export interface JsonShapeLimits {
  maxDepth: number;
  maxKeys: number;
}

/** Which bound a body broke, if any. */
export type JsonShapeViolation = { limit: 'depth' | 'keys' } | null;

/**
 * Walks a parsed JSON value once, without recursion, and stops at the first bound crossed: depth
 * counts nested objects and arrays (the body itself is depth 1), keys count object keys and array
 * elements together, over the whole body. Validation and everything after it copies or walks the
 * body, some of it (class-transformer) in more than linear time and recursively, so a body must
 * be bounded before any of that work starts.
 */
export function checkJsonShape(root: unknown, limits: JsonShapeLimits): JsonShapeViolation {
  if (!isContainer(root)) return null;
  const pending: unknown[] = [root];
  const depths: number[] = [1];
  let keys = 0;
  while (pending.length > 0) {
    const value = pending.pop();
    const depth = depths.pop() as number;
    if (depth > limits.maxDepth) return { limit: 'depth' };
    const children = Array.isArray(value) ? value : Object.values(value as object);
    keys += children.length;
    if (keys > limits.maxKeys) return { limit: 'keys' };
    for (const child of children) {
      if (!isContainer(child)) continue;
      pending.push(child);
      depths.push(depth + 1);
    }
  }
  return null;
}

function isContainer(value: unknown): value is object {
  return typeof value === 'object' && value !== null;
}
