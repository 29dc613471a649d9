// "Latest requests": newest first, a page at a time, narrowed by the filters above the table (status or error code,
// key, model, endpoint, streamed, and a request-id search). Each row carries its request id (the x-request-id the
// client got and the id in the gateway's log line), its key's name and prefix (two keys of one name are told apart),
// and a mark when it streamed. A run of GROUP_MIN or more identical errors in a row (same status, code, key, model
// and endpoint: a client retrying into a limit) shows as one row that expands to its requests.
import { api, query } from './api.js';
import { $, element, integer, tableRow, utcTime } from './dom.js';
import { cells, copy, keyParts, modelText } from './latest-cells.js';
import { isCurrent, loadPanel } from './panels.js';

/** Identical errors in a row from which they show as one row. */
const GROUP_MIN = 3;
/** The request-id search takes a whole id or its first characters, this many at least (the API's limit). */
const SEARCH_MIN = 6;
const SEARCH_WAIT_MS = 400;
/** The API's `model` for the requests recorded without one. */
const NO_MODEL = '(none)';
/** Each column's name, shown beside its value when the table becomes cards (latest.css, phones). */
const LABELS = {
  time: 'Time (UTC)', request_id: 'Request id', key: 'Key', model: 'Model', endpoint: 'Endpoint',
  result: 'Status', usage: 'Usage', cost_usd: 'Cost (USD)', latency_ms: 'Latency',
};
const FILTERS = { status: 'latest-status', key_id: 'latest-key', model: 'latest-model', endpoint: 'latest-endpoint', streamed: 'latest-streamed' };

/** The filters chosen; kept while the same account is shown (another period), cleared for another account. */
let filters = {};
let filtersOf = null;
/** What the table shows: `{ sel, keys, lastId, loading, tail, groups, request }`. */
let view = null;

/** The panel for `sel`: the first page (with the filters), the account's keys, and the statuses the period saw. */
export function loadLatest(sel) {
  if (filtersOf !== sel.accountId) {
    filters = {};
    filtersOf = sel.accountId;
  }
  const section = document.querySelector('#report [data-panel="latest"]');
  return loadPanel(section, sel, loadFirst, render);
}

async function loadFirst(sel) {
  // The filter bar's choices come from the report's usage summary and keys list; without them the table still shows.
  const [first, summary, keyList] = await Promise.all([fetchPage(sel, null), sel.usage.catch(() => null), sel.keys.catch(() => null)]);
  return { first, summary, keyList };
}

function fetchPage(sel, after) {
  const params = query({ from: sel.period.from, to: sel.period.to, ...apiFilters(), after: after || undefined });
  return api(`/dashboard/api/accounts/${encodeURIComponent(sel.accountId)}/requests?${params}`);
}

/** The filters as the API's parameters, in a fixed order: the status choice holds its own (`status=429&code=rate_limit_exceeded`). */
function apiFilters() {
  const params = filters.status ? Object.fromEntries(new URLSearchParams(filters.status)) : {};
  for (const name of ['key_id', 'model', 'endpoint', 'streamed']) if (filters[name]) params[name] = filters[name];
  if (filters.request_id && filters.request_id.length >= SEARCH_MIN) params.request_id = filters.request_id;
  return params;
}

function render({ first, summary, keyList }, sel) {
  const keys = new Map((summary ? summary.by_key : []).map((k) => [k.key_id, { name: k.key_name, prefix: k.key_prefix, revoked_at: k.revoked_at }]));
  for (const k of keyList || []) keys.set(k.id, { name: k.name, prefix: k.prefix, revoked_at: k.revoked_at });
  view = { sel, keys, lastId: null, loading: false, tail: null, groups: new Map(), request: null };
  fillFilters(summary, keys);
  showRows(first);
}

// ---- the filter bar --------------------------------------------------------------------------

function fillFilters(summary, keys) {
  const seen = new Map();
  for (const endpoint of summary ? summary.by_endpoint : []) {
    for (const s of endpoint.statuses) {
      const value = query({ status: s.status, code: s.error_code || undefined });
      seen.set(value, { status: s.status, code: s.error_code, requests: (seen.get(value)?.requests || 0) + s.requests });
    }
  }
  const statuses = [...seen.entries()].sort(([, a], [, b]) => a.status - b.status || String(a.code).localeCompare(String(b.code)));
  options('latest-status', 'status', [
    ['', 'All'],
    ['status=failed', 'Failed (400 and above)'],
    ['status=2xx', '2xx'],
    ['status=4xx', '4xx'],
    ['status=5xx', '5xx'],
    ...statuses.map(([value, s]) => [value, `${s.status}${s.code ? ` ${s.code}` : ''} (${integer.format(s.requests)})`]),
  ]);
  const keyChoices = [...keys.entries()].sort(([, a], [, b]) => String(a.name).localeCompare(String(b.name)) || a.prefix.localeCompare(b.prefix));
  options('latest-key', 'key_id', [['', 'All keys'], ...keyChoices.map(([id, k]) => [id, `${k.name || '(unnamed)'} · ${k.prefix}${k.revoked_at ? ' · revoked' : ''}`])]);
  const models = summary ? summary.by_model.filter((m) => m.model !== null && !m.unknown).map((m) => m.model) : [];
  options('latest-model', 'model', [['', 'All models'], ...models.map((m) => [m, m]), [NO_MODEL, '(none): no model recorded']]);
  const endpoints = summary ? summary.by_endpoint.map((e) => e.endpoint) : [];
  options('latest-endpoint', 'endpoint', [['', 'All endpoints'], ...endpoints.map((e) => [e, e])]);
  $('latest-streamed').value = filters.streamed || '';
  $('latest-request-id').value = filters.request_id || '';
}

/** Fills a select with `[value, text]` choices; a chosen value the period did not see stays a choice. */
function options(id, filter, choices) {
  const chosen = filters[filter] || '';
  if (chosen && !choices.some(([value]) => value === chosen)) choices.push([chosen, chosen]);
  $(id).replaceChildren(...choices.map(([value, text]) => new Option(text, value)));
  $(id).value = chosen;
}

for (const [filter, id] of Object.entries(FILTERS)) {
  $(id).addEventListener('change', () => {
    filters[filter] = $(id).value;
    void reload();
  });
}

let searchTimer = null;
function search(now) {
  clearTimeout(searchTimer);
  const text = $('latest-request-id').value.trim();
  if (text.length > 0 && !/^[A-Za-z0-9_-]{1,64}$/.test(text)) {
    setState('A request id has at most 64 letters, digits, _ and -.');
    return;
  }
  if (text.length > 0 && text.length < SEARCH_MIN) {
    if (now) setState(`Type at least ${SEARCH_MIN} characters of a request id.`);
    return;
  }
  if (text === (filters.request_id || '')) return;
  const apply = () => {
    filters.request_id = text;
    void reload();
  };
  if (now) apply();
  else searchTimer = setTimeout(apply, SEARCH_WAIT_MS);
}
$('latest-request-id').addEventListener('input', () => search(false));
$('latest-filters').addEventListener('submit', (event) => {
  event.preventDefault();
  search(true);
});
$('latest-clear').addEventListener('click', () => {
  filters = {};
  for (const id of Object.values(FILTERS)) $(id).value = '';
  $('latest-request-id').value = '';
  void reload();
});

/** Page 1 again, with the filters; an answer that comes after another reload or another selection is dropped. */
async function reload() {
  if (!view || !isCurrent(view.sel)) return;
  const current = view;
  const request = (current.request = {});
  setState('Loading…');
  $('latest').setAttribute('aria-busy', 'true');
  try {
    const first = await fetchPage(current.sel, null);
    if (view !== current || current.request !== request || !isCurrent(current.sel)) return;
    showRows(first);
  } catch (err) {
    if (view === current && current.request === request) setState(`Could not load the requests: ${err.message}`, true);
  } finally {
    if (view === current && current.request === request) $('latest').setAttribute('aria-busy', 'false');
  }
}

function setState(text, failed = false) {
  const state = $('latest-state');
  state.textContent = text;
  state.classList.toggle('error', failed);
  state.hidden = text === '';
}

// ---- the rows ----------------------------------------------------------------------------------

function showRows(page) {
  $('latest').tBodies[0].replaceChildren();
  Object.assign(view, { lastId: null, tail: null, groups: new Map() });
  setState('');
  appendRows(page.data, page.has_more);
  $('latest').dataset.filters = query(apiFilters());
}

async function loadMore() {
  if (!view || view.loading) return;
  const current = view;
  const request = current.request;
  current.loading = true;
  $('latest-more').disabled = true;
  try {
    const next = await fetchPage(current.sel, current.lastId);
    if (view === current && current.request === request && isCurrent(current.sel)) appendRows(next.data, next.has_more);
  } catch (err) {
    if (view === current) setState(`Could not load more requests: ${err.message}`, true);
  } finally {
    current.loading = false;
    $('latest-more').disabled = false;
  }
}

function appendRows(rows, hasMore) {
  const body = $('latest').tBodies[0];
  if (rows.length === 0 && body.rows.length === 0) body.append(emptyRow());
  for (const r of rows) {
    const tr = tableRow(r, (row) => cells(row, view.keys), (row) => ({ requestId: row.request_id }), (row) => (row.status >= 400 ? 'failed' : ''));
    for (const td of tr.cells) td.dataset.label = LABELS[td.dataset.col];
    body.append(tr);
    group(r, tr);
  }
  if (rows.length > 0) view.lastId = rows[rows.length - 1].request_id;
  $('latest-more').hidden = !hasMore;
  const shown = integer.format(body.querySelectorAll('tr[data-request-id]').length);
  const filtered = Object.keys(apiFilters()).length > 0 ? ' matching the filters' : '';
  $('latest-count').textContent = `${shown} shown${filtered}${hasMore ? ', more to load' : ''}`;
}

function emptyRow() {
  const text = Object.keys(apiFilters()).length > 0 ? 'No requests in this period match these filters.' : 'No requests in this period.';
  return element('tr', {}, [element('td', { colSpan: $('latest').tHead.rows[0].cells.length, className: 'empty', textContent: text })]);
}

/**
 * Adds a row to the run of identical errors before it (across pages too), or starts a new run. A run of GROUP_MIN
 * rows gets a heading row before it and its rows are hidden until the heading's button shows them.
 */
function group(r, tr) {
  const sig = r.status >= 400 ? JSON.stringify([r.status, r.error_code, r.key_id, r.model, r.endpoint]) : null;
  const tail = view.tail;
  if (sig === null || !tail || tail.sig !== sig) {
    view.tail = sig === null ? null : { sig, rows: [{ r, tr }], header: null, expanded: false };
    return;
  }
  tail.rows.push({ r, tr });
  if (tail.rows.length < GROUP_MIN) return;
  if (!tail.header) {
    tail.id = `run-${view.groups.size + 1}`;
    view.groups.set(tail.id, tail);
    tail.header = element('tr', { className: 'run failed', dataset: { run: tail.id } });
    tail.rows[0].tr.before(tail.header);
  }
  for (const member of tail.rows) {
    member.tr.classList.add('run-member');
    member.tr.dataset.runOf = tail.id;
    member.tr.hidden = !tail.expanded;
  }
  fillRunHeader(tail);
}

/** "429 rate_limit_exceeded × 67 · key · model · endpoint, from … to …", and the button that shows or hides them. */
function fillRunHeader(run) {
  const { r } = run.rows[0];
  const newest = r.created_at;
  const oldest = run.rows[run.rows.length - 1].r.created_at;
  const count = integer.format(run.rows.length);
  const button = element('button', { type: 'button', className: 'run-toggle secondary', textContent: `${run.expanded ? 'Hide' : 'Show'} ${count} requests` });
  button.setAttribute('aria-expanded', String(run.expanded));
  button.setAttribute('aria-label', `${run.expanded ? 'Hide' : 'Show'} ${count} requests: ${r.status}${r.error_code ? ` ${r.error_code}` : ''}`);
  const td = element('td', { colSpan: $('latest').tHead.rows[0].cells.length, dataset: { col: 'run' } }, [
    element('strong', { className: 'run-what', textContent: `${r.status}${r.error_code ? ` ${r.error_code}` : ''} × ${count}` }),
    ' · ', ...keyParts(r, view.keys),
    ` · ${r.model === null ? modelText(r) : r.model} · ${r.endpoint}`,
    element('span', { className: 'run-when', textContent: `, from ${utcTime(oldest)} to ${utcTime(newest).slice(11)} UTC`, title: `${oldest} to ${newest}` }),
    ' ', button,
  ]);
  run.header.replaceChildren(td);
}

function toggleRun(button) {
  const run = view && view.groups.get(button.closest('tr').dataset.run);
  if (!run) return;
  run.expanded = !run.expanded;
  for (const member of run.rows) member.tr.hidden = !run.expanded;
  fillRunHeader(run);
  run.header.querySelector('button.run-toggle').focus();
}

$('latest').addEventListener('click', (event) => {
  const copyButton = event.target.closest('button.copy');
  if (copyButton) return void copy(copyButton);
  const runButton = event.target.closest('button.run-toggle');
  if (runButton) toggleRun(runButton);
});
$('latest-more').addEventListener('click', () => void loadMore());
