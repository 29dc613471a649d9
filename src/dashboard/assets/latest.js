// "Latest requests": newest first, a page at a time. Each row carries its request id (the x-request-id
// the client got and the id in the gateway's log line) with a button that copies it.
import { api, query } from './api.js';
import { $, element, emptyRow, integer, seconds, tableRow, utcTime } from './dom.js';
import { revokedMark, TOKEN_CLASSES } from './tables.js';

const COPIED_MS = 1500;
let page = null;

/** Shows the summary's first page; `source` says where the next pages come from. */
export function renderLatest(usage, source) {
  const keys = new Map(usage.by_key.map((k) => [k.key_id, k]));
  page = { ...source, keys, lastId: null, loading: false };
  $('latest').tBodies[0].replaceChildren();
  appendRows(usage.latest, usage.latest_has_more);
}

async function loadMore() {
  if (!page || page.loading) return;
  const current = page;
  current.loading = true;
  $('latest-more').disabled = true;
  try {
    const params = query({ from: current.from, to: current.to, after: current.lastId });
    const next = await api(`/dashboard/api/accounts/${encodeURIComponent(current.accountId)}/requests?${params}`);
    if (page === current) appendRows(next.data, next.has_more);
  } catch (err) {
    if (page === current) current.onError(err);
  } finally {
    current.loading = false;
    $('latest-more').disabled = false;
  }
}

function appendRows(rows, hasMore) {
  const body = $('latest').tBodies[0];
  if (rows.length === 0 && body.rows.length === 0) body.append(emptyRow($('latest')));
  body.append(...rows.map((r) => tableRow(r, cells, (row) => ({ requestId: row.request_id }), (row) => (row.status >= 400 ? 'failed' : ''))));
  if (rows.length > 0) page.lastId = rows[rows.length - 1].request_id;
  $('latest-more').hidden = !hasMore;
  $('latest-count').textContent = `${integer.format(body.querySelectorAll('tr[data-request-id]').length)} shown${hasMore ? ', more to load' : ''}`;
}

function cells(r) {
  const key = page.keys.get(r.key_id);
  return [
    { text: utcTime(r.created_at).slice(5), col: 'time', title: r.created_at },
    { text: '', col: 'request_id', extra: requestId(r.request_id) },
    { text: '', col: 'key', extra: [keyName(key ? key.key_name || key.key_prefix : r.key_id), ...revokedMark(key && key.revoked_at, true)] },
    { text: r.model === null ? '' : r.model, col: 'model', title: r.model || '' },
    { text: r.endpoint, col: 'endpoint' },
    { text: '', col: 'result', extra: [part('status', String(r.status)), r.error_code ? ' ' : '', part('error_code', r.error_code || '')] },
    { text: '', col: 'usage', extra: usageParts(r), num: true },
    { text: '', col: 'cost_usd', extra: [part('cost', r.cost_usd), ...pricedParts(r)], num: true },
    { text: `${integer.format(r.latency_ms)} ms`, col: 'latency_ms', num: true },
  ];
}

function keyName(name) {
  return element('span', { className: 'clip', textContent: name, title: name });
}

function part(col, text) {
  return element('span', { textContent: text, dataset: { col } });
}

/** What the request used, in its own units: tokens for chat, seconds heard, characters spoken. */
function usageParts(r) {
  const parts = [];
  if (r.prompt_tokens || r.completion_tokens) {
    parts.push([part('prompt_tokens', integer.format(r.prompt_tokens)), ' → ', part('completion_tokens', integer.format(r.completion_tokens)), ' tok', ...classParts(r)]);
  }
  if (r.audio_seconds) parts.push([part('audio_seconds', seconds(r.audio_seconds)), ' s']);
  if (r.input_chars) parts.push([part('input_chars', integer.format(r.input_chars)), ' chars']);
  return parts.length ? parts.flatMap((p, i) => (i ? [' · ', ...p] : p)) : ['—'];
}

/** The token classes the request used, on a line of their own under its tokens: "1,024 cached · 200 reasoning". */
function classParts(r) {
  const used = TOKEN_CLASSES.filter((c) => r[c.col] > 0);
  if (used.length === 0) return [];
  // Each class unbroken; the line breaks between them when the column is narrow.
  const listed = used.flatMap((c, i) => [i ? ' · ' : '', element('span', { className: 'token-class' }, [part(c.col, integer.format(r[c.col])), ` ${c.label}`])]);
  return [element('span', { className: 'part token-classes' }, listed)];
}

/**
 * How the charge was priced beyond the flat prices (docs/billing.md, "Price variants and server tools"), on a line
 * of its own under the cost: each variant applied by its conditions, each server tool's uses and fees.
 */
function pricedParts(r) {
  const variants = (r.price_variants || []).map((when) => Object.entries(when).map(([option, value]) => conditionText(option, value)).join(' & '));
  const tools = Object.entries(r.tool_uses || {}).map(([name, t]) => `${integer.format(t.uses)} × ${name} $${t.cost_usd}`);
  const listed = [...variants, ...tools];
  if (listed.length === 0) return [];
  return [element('span', { className: 'part priced-as', textContent: listed.join(' · '), dataset: { col: 'priced_as' } })];
}

function conditionText(option, value) {
  if (option === 'prompt_tokens_over') return `prompt > ${integer.format(value)} tok`;
  return `${option.replace('_', ' ')} ${Array.isArray(value) ? value.join('/') : value}`;
}

function requestId(id) {
  const code = element('code', { className: 'request-id', textContent: id });
  const button = element('button', { type: 'button', className: 'copy', textContent: 'Copy', title: `Copy ${id}`, dataset: { copy: id } });
  button.setAttribute('aria-label', `Copy request id ${id}`);
  return [code, button];
}

// The clipboard API needs a secure context (https, or localhost); elsewhere the id is selected and copied.
async function copy(button) {
  const id = button.dataset.copy;
  try {
    await navigator.clipboard.writeText(id);
  } catch {
    const range = document.createRange();
    range.selectNodeContents(button.previousElementSibling);
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    document.execCommand('copy');
  }
  button.textContent = 'Copied';
  setTimeout(() => (button.textContent = 'Copy'), COPIED_MS);
}

$('latest').addEventListener('click', (event) => {
  const button = event.target.closest('button.copy');
  if (button) void copy(button);
});
$('latest-more').addEventListener('click', () => void loadMore());
