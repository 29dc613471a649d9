// The report's cards other than the chart and the latest requests: account facts, totals, per key,
// per model and per endpoint.
import { $, element, facts, fillTable, integer, percent, seconds, utcTime } from './dom.js';
import { renderHeadroom } from './headroom.js';

const UNKNOWN_MODEL = '(unknown models)';

/**
 * The token classes (DESIGN.md section 10), each a part of the prompt or completion tokens, shown after its total;
 * the 1-hour cache writes are a part of the cache writes, shown after them.
 */
export const TOKEN_CLASSES = [
  { col: 'cached_tokens', label: 'cached', name: 'Cached prompt tokens', of: 'prompt' },
  { col: 'cache_write_tokens', label: 'cache write', name: 'Cache-write prompt tokens', of: 'prompt' },
  { col: 'cache_write_1h_tokens', label: 'cache write 1 h', name: 'Cache-write prompt tokens, 1-hour (of the cache writes)', of: 'prompt' },
  { col: 'audio_input_tokens', label: 'audio in', name: 'Audio prompt tokens', of: 'prompt' },
  { col: 'reasoning_tokens', label: 'reasoning', name: 'Reasoning tokens', of: 'completion' },
  { col: 'audio_output_tokens', label: 'audio out', name: 'Audio completion tokens', of: 'completion' },
];

export function renderAccount(account) {
  renderHeadroom($('headroom'), account);
  facts($('account-facts'), [
    ['Account id', account.id],
    ['Credits', `$${account.credits_usd}`],
    ['Reserved', `$${account.reserved_usd}`],
    ['Spend this month', `$${account.month_spend_usd}`],
    ['Monthly limit', account.monthly_limit_usd === null ? 'none' : `$${account.monthly_limit_usd}`],
    ['Rate limits', perMinute(account.rate_limits)],
    ['Subscription', subscription(account.subscription)],
    ['Fair use this month', `${account.fair_use.used} / ${account.fair_use.allowance}`],
    ['Low-credits alert', account.low_credits_usd === null ? 'none' : `below $${account.low_credits_usd}`],
  ]);
}

/**
 * The period's totals. A token class the account never used in the period is left out (its tile would always read
 * 0); the 402s are counted by code, with why a request can be refused below its limit (the reservation).
 */
export function renderTotals(usage) {
  const t = usage.totals;
  const failed = usage.by_endpoint.reduce((sum, e) => sum + e.failed, 0);
  const used = (of) => TOKEN_CLASSES.filter((c) => c.of === of && t[c.col] > 0).map((c) => [c.name, integer.format(t[c.col])]);
  facts($('totals'), [
    ['Requests', integer.format(t.requests)],
    ['Failed (error rate)', `${integer.format(failed)} (${percent(t.requests ? failed / t.requests : 0)})`],
    ['Prompt tokens', integer.format(t.prompt_tokens)],
    ...used('prompt'),
    ['Completion tokens', integer.format(t.completion_tokens)],
    ...used('completion'),
    ...(Number(t.audio_seconds) > 0 ? [['Audio seconds', seconds(t.audio_seconds)]] : []),
    ...(t.input_chars > 0 ? [['Speech characters', integer.format(t.input_chars)]] : []),
    ['Cost', `$${t.cost_usd}`],
  ]);
  renderRefusals(usage.by_endpoint);
}

/** The 402s of the period by code, and the reason one can come while spend is under the limit. */
function renderRefusals(byEndpoint) {
  const byCode = new Map();
  for (const e of byEndpoint) {
    for (const s of e.statuses) if (s.status === 402) byCode.set(s.error_code, (byCode.get(s.error_code) || 0) + s.requests);
  }
  const p = $('refusals');
  p.hidden = byCode.size === 0;
  if (byCode.size === 0) return p.replaceChildren();
  const counts = [...byCode].map(([code, n]) => `${integer.format(n)} × ${code}`).join(', ');
  p.replaceChildren(
    element('strong', { textContent: `Refused for money (402): ${counts}. ` }),
    'Before a chat request runs, the gateway holds its most it could cost (its prompt and max_tokens at the model’s prices) ' +
      'against the credits and every limit; a 402 means that hold did not fit, even when the spend so far is under the limit ' +
      '(money already held by requests in flight counts too). A lower max_tokens, more credits or a higher limit lets such a request through.',
  );
}

/** Hides the token-class columns of a table that are 0 on every row (the cells stay, hidden, for the figures' sake). */
function hideUnusedClasses(table, rows) {
  for (const c of TOKEN_CLASSES) {
    const unused = rows.every((r) => !r[c.col]);
    for (const cell of table.querySelectorAll(`[data-col="${c.col}"]`)) cell.hidden = unused;
  }
}

/** A revoked key says so, with the time it was revoked (UTC); `short` leaves the time to the tooltip. */
export function revokedMark(revokedAt, short = false) {
  if (!revokedAt) return [];
  const text = short ? 'revoked' : `revoked ${utcTime(revokedAt).slice(0, 16)} UTC`;
  return [element('span', { className: 'revoked', title: `Revoked ${revokedAt}`, textContent: text })];
}

export function renderByKey(byKey) {
  fillTable(
    $('by-key'),
    byKey,
    (k) => [
      { text: k.key_name || '(unnamed)', extra: [element('span', { className: 'key-prefix', textContent: k.key_prefix }), ...revokedMark(k.revoked_at)], col: 'key' },
      ...totalsCells(k),
      { text: monthAgainstLimit(k), col: 'month_spend', num: true },
      { text: k.rpm === null && k.tpm === null ? 'default' : perMinute(k), col: 'rate_limits' },
    ],
    (k) => ({ keyId: k.key_id, ...(k.revoked_at ? { revokedAt: k.revoked_at } : {}) }),
    (k) => (k.revoked_at ? 'revoked-key' : ''),
  );
  hideUnusedClasses($('by-key'), byKey);
}

/** Requests and tokens per minute (DESIGN.md 12.4): `60 rpm, 100,000 tpm`; a null one is none (or, for a key's own, the default). */
function perMinute(limits) {
  const parts = [];
  if (limits.rpm !== null) parts.push(`${integer.format(limits.rpm)} rpm`);
  if (limits.tpm !== null) parts.push(`${integer.format(limits.tpm)} tpm`);
  return parts.length > 0 ? parts.join(', ') : 'none';
}

/** The key's spend this UTC month against its own monthly limit (key controls), whatever the period shown. */
function monthAgainstLimit(k) {
  return k.monthly_limit_usd === null ? `${k.month_spend_usd} (no limit)` : `${k.month_spend_usd} of ${k.monthly_limit_usd}`;
}

// Ids outside the catalog come as one row (unknown: true): whatever clients sent, never a row each.
export function renderByModel(byModel) {
  fillTable($('by-model'), byModel, (m) => [{ text: modelLabel(m), col: 'model' }, ...totalsCells(m)], (m) => ({
    model: m.unknown ? UNKNOWN_MODEL : m.model === null ? '' : m.model,
  }));
  hideUnusedClasses($('by-model'), byModel);
}

export function renderByEndpoint(byEndpoint) {
  fillTable(
    $('by-endpoint'),
    byEndpoint,
    (e) => [
      { text: e.endpoint, col: 'endpoint' },
      { text: integer.format(e.requests), col: 'requests', num: true },
      { text: integer.format(e.failed), col: 'failed', num: true },
      { text: percent(e.error_rate), col: 'error_rate', num: true },
      { text: '', col: 'statuses', extra: e.statuses.map(statusChip) },
    ],
    (e) => ({ endpoint: e.endpoint, errorRate: String(e.error_rate) }),
  );
}

function statusChip(s) {
  const text = `${s.status}${s.error_code ? ` ${s.error_code}` : ''} × ${integer.format(s.requests)}`;
  return element('span', {
    className: `chip ${s.status >= 400 ? 'chip-failed' : 'chip-ok'}`,
    textContent: text,
    dataset: { status: String(s.status), errorCode: s.error_code || '', requests: String(s.requests) },
  });
}

function totalsCells(t) {
  const parts = (of) => TOKEN_CLASSES.filter((c) => c.of === of).map((c) => ({ text: integer.format(t[c.col]), col: c.col, num: true, part: true }));
  return [
    { text: integer.format(t.requests), col: 'requests', num: true },
    { text: integer.format(t.prompt_tokens), col: 'prompt_tokens', num: true },
    ...parts('prompt'),
    { text: integer.format(t.completion_tokens), col: 'completion_tokens', num: true },
    ...parts('completion'),
    { text: seconds(t.audio_seconds), col: 'audio_seconds', num: true },
    { text: integer.format(t.input_chars), col: 'input_chars', num: true },
    { text: t.cost_usd, col: 'cost_usd', num: true },
  ];
}

function modelLabel(m) {
  if (m.unknown) return UNKNOWN_MODEL;
  return m.model === null ? '(none)' : m.model;
}

function subscription(s) {
  if (s.status === 'none') return 'none';
  return s.ends_at ? `${s.status} until ${s.ends_at.slice(0, 10)}` : s.status;
}
