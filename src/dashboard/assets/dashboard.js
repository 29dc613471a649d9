// The operator console: sign in with the admin token; the landing view is the overview of every account, and an
// account's report opens from it or from the picker. What is on screen is held in the URL's hash (account, and a
// month or a date range), so a report can be bookmarked, shared and reached with the browser's back button.
import { api, download, forgetToken, hasToken, keepToken, query, useToken } from './api.js';
import { chart } from './chart.js';
import { $ } from './dom.js';
import { loadLatest } from './latest.js';
import { loadManage } from './manage.js';
import { loadOverview } from './overview.js';
import { clearPanels, configurePanels, isCurrent, loadPanel, select, selectionTitle } from './panels.js';
import { periodOf, periodFromHash, periodHash, wholeMonth } from './period.js';
import { renderAccount, renderByEndpoint, renderByKey, renderByModel, renderTotals } from './tables.js';
import { renderByDeployment, renderUpstreams } from './upstreams.js';
import { renderWebhooks } from './webhooks.js';

/** Account id → name, of the accounts the picker lists. */
const names = new Map();

// ---- sign in / out -------------------------------------------------------------------------

function showSignIn(message) {
  forgetToken();
  select({ accountId: null, label: '' });
  $('workspace').hidden = true;
  $('nav').hidden = true;
  $('sign-in').hidden = false;
  $('sign-in-error').hidden = !message;
  $('sign-in-error').textContent = message || '';
  $('admin-token').value = '';
  $('admin-token').focus();
}

async function enter() {
  try {
    await loadAccounts('');
  } catch (err) {
    if (err.status === 401) return showSignIn('That admin token was refused.');
    return showSignIn(`Could not reach the gateway: ${err.message}`);
  }
  keepToken();
  $('sign-in').hidden = true;
  $('workspace').hidden = false;
  $('nav').hidden = false;
  await show();
}

$('sign-in-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const token = $('admin-token').value.trim();
  if (!token) return;
  useToken(token);
  void enter();
});
$('sign-out').addEventListener('click', () => showSignIn(''));
configurePanels({ reload: () => show(), signOut: (message) => showSignIn(message) });

// ---- what to show: the account picker and the period ---------------------------------------

async function loadAccounts(search) {
  const accounts = await api(`/dashboard/api/accounts${search ? `?${query({ q: search })}` : ''}`);
  for (const a of accounts) names.set(a.id, a.name);
  const select = $('account');
  const previous = select.value;
  const overview = new Option('All accounts (overview)', '');
  select.replaceChildren(overview, ...accounts.map((a) => new Option(`${a.name} — ${a.id}`, a.id)));
  if (previous && !accounts.some((a) => a.id === previous)) select.append(new Option(`${names.get(previous) || previous} — ${previous}`, previous));
  select.value = previous;
  if (accounts.length === 0) setStatus(search ? `No account matches “${search}”.` : 'No accounts yet.');
  return accounts;
}

let searchTimer = null;
$('account-search').addEventListener('input', () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => {
    loadAccounts($('account-search').value.trim()).catch(handleError);
  }, 250);
});

/** The state the filters show, as the hash holds it. */
function wanted() {
  const params = new URLSearchParams(location.hash.slice(1));
  return { accountId: params.get('account') || null, period: periodFromHash(params, new Date()) };
}

/** Shows `state` by way of the hash (one path for links, the picker and the back button). */
function go(state) {
  const params = new URLSearchParams(periodHash(state.period));
  if (state.accountId) params.set('account', state.accountId);
  const hash = `#${params}`;
  if (location.hash === hash) void show();
  else location.hash = hash;
}

$('account').addEventListener('change', () => go({ ...wanted(), accountId: $('account').value || null }));
$('month').addEventListener('change', () => {
  if (!/^\d{4}-\d{2}$/.test($('month').value)) return;
  go({ ...wanted(), period: wholeMonth($('month').value) });
});
for (const id of ['from', 'to']) {
  $(id).addEventListener('change', () => {
    const from = $('from').value;
    const to = $('to').value;
    if (!from || !to) return;
    if (to < from) return setStatus('The period’s end is before its start.');
    go({ ...wanted(), period: periodOf(from, to) });
  });
}
$('filters').addEventListener('submit', (event) => event.preventDefault());
$('nav-overview').addEventListener('click', (event) => {
  event.preventDefault();
  go({ ...wanted(), accountId: null });
});
window.addEventListener('hashchange', () => void show());

// ---- the views -----------------------------------------------------------------------------

async function show() {
  if ($('workspace').hidden) return;
  const { accountId, period } = wanted();
  if (accountId && !names.has(accountId)) {
    // An account from a link, outside the picker's list: the picker gets it, named once its report says the name.
    if (![...$('account').options].some((o) => o.value === accountId)) $('account').append(new Option(accountId, accountId));
  }
  $('account').value = accountId || '';
  $('month').value = period.month || '';
  $('from').value = period.from;
  $('to').value = period.to;
  const sel = select({ accountId, accountName: accountId ? names.get(accountId) || accountId : null, ...period, period: period.range });
  delete document.body.dataset.loaded;
  setStatus('');
  if (accountId) await showReport(sel);
  else await showOverview(sel);
  if (!isCurrent(sel)) return;
  const failed = [...document.querySelectorAll('#workspace [data-panel].panel-failed')].filter((p) => !p.closest('[hidden]'));
  setStatus(failed.length ? `${failed.length} panel${failed.length > 1 ? 's' : ''} could not load; the others are up to date.` : `Updated ${new Date().toISOString().slice(11, 19)} UTC`);
  document.body.dataset.loaded = `${accountId || 'overview'}/${sel.label}`;
}

async function showOverview(sel) {
  $('report').hidden = true;
  clearPanels($('report'));
  $('overview').hidden = false;
  $('overview-for').textContent = selectionTitle(sel);
  document.title = `AI gateway · overview · ${sel.label}`;
  await loadOverview(sel);
}

async function showReport(sel) {
  $('overview').hidden = true;
  clearPanels($('overview'));
  $('report').hidden = false;
  $('account-name').textContent = selectionTitle(sel);
  document.title = `AI gateway · ${sel.accountName} · ${sel.label}`;
  const id = encodeURIComponent(sel.accountId);
  // One read of the usage summary feeds six panels, one of the account its facts and its action forms, one of the keys
  // the keys panel and the latest requests' filters; each panel says for itself that it failed.
  sel.account = api(`/admin/v1/accounts/${id}`);
  sel.usage = api(`/admin/v1/accounts/${id}/usage?${query({ from: sel.period.from, to: sel.period.to })}`);
  sel.keys = api(`/admin/v1/accounts/${id}/keys`).then((answer) => answer.data);
  for (const read of [sel.account, sel.usage, sel.keys]) read.catch(() => {});
  const fromUsage = (panel, render) => loadPanel(panelOf(panel), sel, () => sel.usage, render);
  await Promise.all([
    loadPanel(panelOf('account'), sel, () => sel.account, (account) => {
      renderAccount(account);
      nameAccount(sel, account.name);
    }),
    fromUsage('totals', (usage) => renderTotals(usage)),
    fromUsage('chart', (usage) => chart($('daily-chart'), usage.daily, sel)),
    fromUsage('by-endpoint', (usage) => renderByEndpoint(usage.by_endpoint)),
    fromUsage('by-key', (usage) => renderByKey(usage.by_key)),
    fromUsage('by-model', (usage) => renderByModel(usage.by_model)),
    fromUsage('by-deployment', (usage) => renderByDeployment(usage.by_deployment)),
    loadPanel(panelOf('upstreams'), sel, () => api('/admin/v1/upstreams'), renderUpstreams),
    loadPanel(panelOf('webhooks'), sel, () => api('/admin/v1/webhooks/deliveries?limit=20'), renderWebhooks),
    loadManage(sel),
    loadLatest(sel),
  ]);
}

function panelOf(name) {
  return document.querySelector(`#report [data-panel="${name}"]`);
}

/** The report's title and the picker learn the name of an account opened by its id. */
function nameAccount(sel, name) {
  names.set(sel.accountId, name);
  if (sel.accountName === name) return;
  sel.accountName = name;
  $('account-name').textContent = selectionTitle(sel);
  const option = [...$('account').options].find((o) => o.value === sel.accountId);
  if (option) option.textContent = `${name} — ${sel.accountId}`;
}

// The statement of the account and period on screen (issue 35): every ledger movement, reconciled, as CSV.
$('statement-csv').addEventListener('click', () => {
  const { accountId, period } = wanted();
  if (!accountId) return;
  download(`/admin/v1/accounts/${encodeURIComponent(accountId)}/statement?${query({ from: period.range.from, to: period.range.to, format: 'csv' })}`).catch(handleError);
});

function handleError(err) {
  if (err.status === 401) return showSignIn('The admin token was refused; sign in again.');
  setStatus(`Error: ${err.message}`);
}

function setStatus(text) {
  $('status').textContent = text;
}

// ---- start -----------------------------------------------------------------------------------

if (hasToken()) void enter();
else showSignIn('');
