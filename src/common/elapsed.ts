/** Seconds since a `process.hrtime.bigint()` reading. */
export function secondsSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}
