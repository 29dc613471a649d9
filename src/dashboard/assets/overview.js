// The all-accounts overview, the landing view after sign-in (DESIGN.md 12.5): the period's totals, and the accounts to
// look at first (top spenders, near their monthly limit, low on credits, highest error rate). One read of
// /dashboard/api/overview feeds every panel; each panel loads and fails on its own (panels.js). Each account's name
// opens its report for the same period. Amounts are the API's decimal strings; floats only size the bars.
import { api, query } from './api.js';
import { $, element, facts, integer, percent } from './dom.js';
import { levelOf, meter, micros, percentOf, usd, usedShare } from './headroom.js';
import { loadPanel } from './panels.js';

/** Loads the overview of `sel` (no account, a period) into section#overview; resolves when every panel is done. */
export async function loadOverview(sel) {
  sel.overview = api(`/dashboard/api/overview?${query({ from: sel.period.from, to: sel.period.to })}`);
  sel.overview.catch(() => {});
  const panel = (name, render) => loadPanel(document.querySelector(`#overview [data-panel="overview-${name}"]`), sel, () => sel.overview, render);
  await Promise.all([
    panel('totals', (answer) => renderTotals(answer)),
    panel('top-spenders', (answer) => fill('top-spenders', answer.top_spenders, sel, 'No account has spent anything in this period.', spenderCells)),
    panel('near-limit', (answer) => fill('near-limit', answer.near_limit, sel, 'No account is at 80% of its monthly limit this month.', nearLimitCells, answer.totals.near_limit)),
    panel('low-credits', (answer) => fill('low-credits', answer.low_credits, sel, 'No account is low on credits.', lowCreditsCells, answer.totals.low_credits)),
    panel('error-rate', (answer) => fill('error-rate', answer.highest_error_rate, sel, 'No failed request in this period.', errorRateCells)),
  ]);
}

function renderTotals(answer) {
  const t = answer.totals;
  const rate = t.requests > 0 ? ` (${percent(t.failed / t.requests)})` : '';
  const entries = [
    ['Accounts with requests', `${integer.format(t.active_accounts)} of ${integer.format(t.accounts)}`],
    ['Requests', integer.format(t.requests)],
    ['Failed', `${integer.format(t.failed)}${rate}`],
    ['Refused for payment (402)', integer.format(t.payment_refusals)],
    ['Cost (USD)', t.cost_usd],
    ['Near their monthly limit', integer.format(t.near_limit)],
    ['Low on credits', integer.format(t.low_credits)],
  ];
  facts($('overview-totals'), entries);
}

/** One table of accounts; `total` (the flagged lists): how many there are in all, when the list shows fewer. */
function fill(name, rows, sel, emptyText, cells, total) {
  const table = $(`overview-${name}`);
  const count = $(`overview-${name}-count`);
  count.textContent = total !== undefined && total > rows.length ? `${rows.length} of ${integer.format(total)} shown` : '';
  const heads = [...table.tHead.rows[0].cells].map((th) => th.textContent);
  if (rows.length === 0) {
    const td = element('td', { colSpan: heads.length, className: 'empty', textContent: emptyText });
    table.tBodies[0].replaceChildren(element('tr', {}, [td]));
    return;
  }
  table.tBodies[0].replaceChildren(
    ...rows.map((row) => {
      const tds = [accountCell(row, sel), ...cells(row)].map((cell, i) => {
        const td = element('td', { className: cell.num ? 'num' : '', dataset: { label: heads[i] } });
        td.append(...[].concat(cell.content));
        return td;
      });
      return element('tr', { dataset: { accountId: row.id } }, tds);
    }),
  );
}

/** The account's name, a link to its report for the period on screen (dashboard.js follows the hash). */
function accountCell(row, sel) {
  const href = `#${new URLSearchParams({ account: row.id, from: sel.from, to: sel.to })}`;
  return { content: element('a', { href, textContent: row.name || row.id, title: row.id }) };
}

const num = (text) => ({ num: true, content: text });

function spenderCells(row) {
  return [num(row.cost_usd), num(integer.format(row.requests)), num(integer.format(row.failed)), num(available(row))];
}

function nearLimitCells(row) {
  // The API's limit_used is rounded; the bar's share is drawn from the amounts.
  const share = usedShare(row.month_spend_usd, row.monthly_limit_usd);
  return [{ content: limitBar(share, row.monthly_limit_usd) }, num(row.month_spend_usd), num(available(row))];
}

function lowCreditsCells(row) {
  const alert = row.low_credits_usd === null ? '1.000000 (default)' : row.low_credits_usd;
  return [num(available(row)), num(alert), num(integer.format(row.payment_refusals)), num(row.cost_usd)];
}

function errorRateCells(row) {
  return [num(percent(row.error_rate)), num(integer.format(row.failed)), num(integer.format(row.requests)), num(integer.format(row.payment_refusals))];
}

/** Credits less what requests in flight hold; the held part said beside it. */
function available(row) {
  const reserved = micros(row.reserved_usd);
  const left = usd(micros(row.credits_usd) - reserved);
  return reserved > 0n ? `${left} ($${row.reserved_usd} held)` : left;
}

/** The month's spend against the limit: a bar (drawing only) and its words, "85% of $10.000000". */
function limitBar(share, limitUsd) {
  const drawn = meter(share);
  drawn.setAttribute('aria-hidden', 'true');
  return element('span', { className: `overview-limit overview-limit-${levelOf(share)}` }, [drawn, element('span', { textContent: `${percentOf(share)}% of $${limitUsd}` })]);
}
