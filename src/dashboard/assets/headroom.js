// Headroom, not only numbers (DESIGN.md 12.5): how much of the monthly limit is spent and how much credit is left,
// as bars with their percentage and the exact amounts in words. Amounts are the API's decimal strings, added and
// subtracted as integer micro-dollars; floats only size the bars.
import { element } from './dom.js';

/** Below this many USD of available credit an account without its own low-credits alert is marked low. */
export const DEFAULT_LOW_CREDITS_USD = '1.000000';
/** From this share of a monthly limit on, the bar warns. */
export const NEAR_LIMIT = 0.8;

export const micros = (usd) => BigInt(usd.replace('.', '').replace(/^(-?)0+(?=\d)/, '$1'));

export function usd(value) {
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString().padStart(7, '0');
  return `${negative ? '-' : ''}${digits.slice(0, -6)}.${digits.slice(-6)}`;
}

/** What share of a limit is spent, both decimal USD strings: a zero limit allows nothing, so it is wholly used. */
export function usedShare(spentUsd, limitUsd) {
  const limit = micros(limitUsd);
  return limit === 0n ? 1 : Number(micros(spentUsd)) / Number(limit);
}

/** The share as a whole percentage, floored so that 100% means reached; the nudge keeps 0.29 from reading 28 (28.999…). */
export const percentOf = (share) => Math.floor(share * 100 + 1e-9);

/** `ok`, `near` from NEAR_LIMIT on, `full` from 1 on. */
export const levelOf = (share) => (share >= 1 ? 'full' : share >= NEAR_LIMIT ? 'near' : 'ok');

/** The drawn bar of a share (its width only: the words beside it say the figures). */
export function meter(share) {
  const fill = element('span', { className: 'meter-fill' });
  fill.style.width = `${Math.min(100, Math.max(0, share * 100))}%`;
  return element('span', { className: `meter meter-${levelOf(share)}` }, [fill]);
}

/** A labelled bar: `share` 0..1 (or more), its text beside it, warning from NEAR_LIMIT on, full from 1 on. */
export function bar(label, share, text) {
  const pct = percentOf(share);
  const level = levelOf(share);
  const drawn = meter(share);
  drawn.setAttribute('role', 'meter');
  drawn.setAttribute('aria-label', label);
  drawn.setAttribute('aria-valuemin', '0');
  drawn.setAttribute('aria-valuemax', '100');
  drawn.setAttribute('aria-valuenow', String(Math.min(100, pct)));
  drawn.setAttribute('aria-valuetext', `${pct}%: ${text}`);
  return element('div', { className: `headroom-row headroom-${level}`, dataset: { level } }, [
    element('span', { className: 'headroom-label', textContent: label }),
    drawn,
    element('span', { className: 'headroom-text' }, [element('strong', { textContent: `${pct}%` }), ` ${text}`]),
  ]);
}

/** The account's monthly limit and credits, with a warning when credits run low. */
export function renderHeadroom(container, account) {
  const rows = [];
  const spend = micros(account.month_spend_usd);
  const reserved = micros(account.reserved_usd);
  if (account.monthly_limit_usd !== null) {
    const limit = micros(account.monthly_limit_usd);
    const share = usedShare(account.month_spend_usd, account.monthly_limit_usd);
    const held = reserved > 0n ? `, $${usd(reserved)} more held by requests in flight` : '';
    rows.push(bar('Monthly limit', share, `$${usd(spend)} of $${usd(limit)} spent this month, $${usd(limit > spend ? limit - spend : 0n)} left${held}`));
  }
  const available = micros(account.credits_usd) - reserved;
  // What was there to spend this month: what is left plus what was spent; its share left is the credit's headroom.
  const funds = available + spend;
  const left = funds > 0n ? Number(available > 0n ? available : 0n) / Number(funds) : 0;
  rows.push(bar('Credits used this month', 1 - left, `$${usd(available > 0n ? available : 0n)} left of $${usd(funds > 0n ? funds : 0n)} (spent $${usd(spend)}${reserved > 0n ? `, $${usd(reserved)} held` : ''})`));
  const threshold = account.low_credits_usd === null ? DEFAULT_LOW_CREDITS_USD : account.low_credits_usd;
  if (available <= micros(threshold)) {
    const own = account.low_credits_usd === null ? `under $${threshold}` : `at or under its alert of $${threshold}`;
    const warning = element('p', { className: 'warning', textContent: `Low credits: $${usd(available > 0n ? available : 0n)} available, ${own}. Chat requests are refused (402) once a request’s hold no longer fits.` });
    rows.unshift(warning);
  }
  container.replaceChildren(...rows);
}
