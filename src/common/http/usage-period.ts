import { ErrorCode, GatewayError } from '../errors';
import { monthStart } from '../month';

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/**
 * `from` is inclusive and `to` exclusive; a date-only `to` covers that whole UTC day. Both default
 * to the current UTC month so far.
 */
export function usagePeriod(from: string | undefined, to: string | undefined, now = new Date()): { from: Date; to: Date } {
  const start = from ? new Date(from) : monthStart(now);
  let end = to ? new Date(to) : now;
  if (to && DATE_ONLY.test(to)) end = new Date(end.getTime() + 86_400_000);
  if (!to) end = new Date(now.getTime() + 1);
  if (Number.isNaN(start.getTime()) || Number.isNaN(end.getTime())) {
    throw new GatewayError(ErrorCode.InvalidRequest, 'from and to must be ISO 8601 dates or timestamps.', 'from');
  }
  if (end <= start) throw new GatewayError(ErrorCode.InvalidRequest, 'to must be after from.', 'to');
  return { from: start, to: end };
}
