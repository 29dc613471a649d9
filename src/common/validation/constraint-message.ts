/**
 * The message of a failed field to show a client: its type check when that failed (class-validator
 * also reports the range checks an object or a string fails, and "must not be greater than 128"
 * would mislead), else the first one.
 */
export function constraintMessage(constraints: Record<string, string> | undefined): string {
  if (!constraints) return 'invalid value';
  const typeCheck = Object.keys(constraints).find((name) => /^is[A-Z]/.test(name));
  return constraints[typeCheck ?? Object.keys(constraints)[0]] ?? 'invalid value';
}
