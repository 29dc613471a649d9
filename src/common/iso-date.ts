/**
 * The one date format of the admin and usage APIs: a plain date `YYYY-MM-DD` (a UTC day), or an
 * RFC 3339 timestamp `YYYY-MM-DDTHH:MM[:SS[.fraction]]` with its time zone (`Z` or `±HH:MM`).
 * ISO 8601's other forms (week dates like `2026-W05`, ordinal dates, the basic format `20261123`,
 * a timestamp without a zone) are refused: JavaScript cannot read them all, nor read them the same way.
 */
const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):(\d{2}))$/;

export const ISO_DATE_DESCRIPTION = 'a date YYYY-MM-DD or a timestamp YYYY-MM-DDTHH:MM:SS with Z or ±HH:MM';

export function isDateOnly(text: string): boolean {
  return DATE_ONLY.test(text);
}

/** The instant `text` names (a plain date: that day's start, UTC), or null when it is not in the one format. */
export function parseIsoDate(text: string): Date | null {
  const match = DATE_ONLY.exec(text) ?? TIMESTAMP.exec(text);
  if (!match) return null;
  const [year, month, day, hour = 0, minute = 0, second = 0, offsetHours = 0, offsetMinutes = 0] = match
    .slice(1)
    .map((part) => (part === undefined ? undefined : Number(part)));
  if (year! < 1 || !isCalendarDay(year!, month!, day!)) return null;
  if (hour! > 23 || minute! > 59 || second! > 59 || offsetHours! > 23 || offsetMinutes! > 59) return null;
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? null : date;
}

function isCalendarDay(year: number, month: number, day: number): boolean {
  if (month < 1 || month > 12 || day < 1) return false;
  const date = new Date(Date.UTC(2000, month - 1, day));
  date.setUTCFullYear(year);
  return date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}
