/** Money is integer micro-USD everywhere; these are the only conversions to and from USD. */
const USD_PATTERN = /^(\d{1,12})(?:\.(\d{1,6}))?$/;

/** Parses a USD amount (number or decimal string, at most 6 decimals) into micro-USD without float arithmetic. */
export function usdToMicros(value: number | string): bigint | null {
  const text = typeof value === 'number' ? numberToPlainString(value) : value.trim();
  if (text === null) return null;
  const match = USD_PATTERN.exec(text);
  if (!match) return null;
  const fraction = (match[2] ?? '').padEnd(6, '0');
  return BigInt(match[1]) * 1_000_000n + BigInt(fraction);
}

/** Renders micro-USD as a decimal string with exactly six decimals, e.g. "1234567.891234". */
export function microsToUsd(micros: bigint | string | number): string {
  const value = BigInt(micros);
  const sign = value < 0n ? '-' : '';
  const abs = value < 0n ? -value : value;
  return `${sign}${abs / 1_000_000n}.${(abs % 1_000_000n).toString().padStart(6, '0')}`;
}

/**
 * Micro-USD as a JSON number of USD (`usage.cost`): the division of two exact integers, correctly rounded, whose
 * shortest decimal form is the six-decimal amount (1234 µUSD prints as 0.001234).
 */
export function microsToUsdNumber(micros: bigint): number {
  return Number(micros) / 1_000_000;
}

function numberToPlainString(value: number): string | null {
  if (!Number.isFinite(value) || value < 0) return null;
  // Shortest round-trip representation; exponent forms (1e-7) are outside our 6-decimal range anyway.
  const text = String(value);
  return /e/i.test(text) ? null : text;
}
