// The period a view shows: UTC days from `from` to `to`, both included, as the date inputs show them; a whole month
// is labelled and linked by its month. `range` is what the admin API takes: ISO timestamps, `to` exclusive.
const DAY_MS = 86400000;

const day = (date) => date.toISOString().slice(0, 10);

/** `from`..`to` (YYYY-MM-DD, included). */
export function periodOf(from, to) {
  const month = from.slice(0, 7);
  const whole = from === `${month}-01` && to === lastDay(month);
  return {
    from,
    to,
    month: whole ? month : null,
    label: whole ? month : `${from} to ${to}`,
    range: { from: `${from}T00:00:00.000Z`, to: new Date(Date.parse(`${to}T00:00:00Z`) + DAY_MS).toISOString() },
  };
}

export function wholeMonth(month) {
  return periodOf(`${month}-01`, lastDay(month));
}

function lastDay(month) {
  const [year, m] = month.split('-').map(Number);
  return day(new Date(Date.UTC(year, m, 0)));
}

/** The hash's `month`, or its `from` and `to`; the current UTC month otherwise. */
export function periodFromHash(params, now) {
  const month = params.get('month');
  if (month && /^\d{4}-(0[1-9]|1[0-2])$/.test(month)) return wholeMonth(month);
  const from = params.get('from');
  const to = params.get('to');
  if (isDay(from) && isDay(to) && from <= to) return periodOf(from, to);
  return wholeMonth(day(now).slice(0, 7));
}

export function periodHash(period) {
  return period.month ? { month: period.month } : { from: period.from, to: period.to };
}

/** Every day of the period, in order (the chart's slots). */
export function daysOf(period) {
  const days = [];
  for (let t = Date.parse(`${period.from}T00:00:00Z`); t <= Date.parse(`${period.to}T00:00:00Z`); t += DAY_MS) days.push(day(new Date(t)));
  return days;
}

function isDay(value) {
  return typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value) && !Number.isNaN(Date.parse(`${value}T00:00:00Z`));
}
