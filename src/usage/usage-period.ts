import { ErrorCode, GatewayError } from '../errors';
import { isDateOnly, parseIsoDate } from '../common/iso-date';
import { monthStart } from '../common/month';

const DAY_MS = 86_400_000;

/**
 * `from` is inclusive and `to` exclusive; a date-only `to` covers that whole UTC day. Both default
 * to the current UTC month so far. Both are in the one date format of src/common/iso-date.
 */
export function usagePeriod(from: string | undefined, to: string | undefined, now = new Date()): { from: Date; to: Date } {
  const start = from ? parseIsoDate(from) : monthStart(now);
  if (!start) throw notADate('from');
  const end = to ? parseIsoDate(to) : new Date(now.getTime() + 1);
  if (!end) throw notADate('to');
  if (to && isDateOnly(to)) end.setTime(end.getTime() + DAY_MS);
  if (end <= start) throw new GatewayError(ErrorCode.InvalidRequest, 'to must be after from.', 'to');
  return { from: start, to: end };
}

function notADate(param: 'from' | 'to'): GatewayError {
  return new GatewayError(ErrorCode.InvalidRequest, `${param} must be a date YYYY-MM-DD or a timestamp with its time zone.`, param);
}
