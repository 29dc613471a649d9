// The usage dashboard: sign in with the admin token, pick an account and a month, and read the admin API.
import { api, download, forgetToken, hasToken, keepToken, query, useToken } from './api.js';
import { chart } from './chart.js';
import { $ } from './dom.js';
import { renderLatest } from './latest.js';
import { renderAccount, renderByEndpoint, renderByKey, renderByModel, renderTotals } from './tables.js';
import { renderByDeployment, renderUpstreams } from './upstreams.js';

let loadSeq = 0;

// ---- sign in / out -------------------------------------------------------------------------

function showSignIn(message) {
  forgetToken();
  $('workspace').hidden = true;
  $('sign-out').hidden = true;
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
  $('sign-out').hidden = false;
  const params = new URLSearchParams(location.hash.slice(1));
  $('month').value = params.get('month') || new Date().toISOString().slice(0, 7);
  const wanted = params.get('account');
  if (wanted && [...$('account').options].some((o) => o.value === wanted)) $('account').value = wanted;
  await loadReport();
}

$('sign-in-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const token = $('admin-token').value.trim();
  if (!token) return;
  useToken(token);
  void enter();
});
$('sign-out').addEventListener('click', () => showSignIn(''));

// ---- account and month pickers -------------------------------------------------------------

async function loadAccounts(search) {
  const accounts = await api(`/dashboard/api/accounts${search ? `?${query({ q: search })}` : ''}`);
  const select = $('account');
  const previous = select.value;
  select.replaceChildren(
    ...accounts.map((a) => {
      const option = document.createElement('option');
      option.value = a.id;
      option.textContent = `${a.name} — ${a.id}`;
      return option;
    }),
  );
  if (accounts.some((a) => a.id === previous)) select.value = previous;
  if (accounts.length === 0) setStatus(search ? `No account matches “${search}”.` : 'No accounts yet.');
  return accounts;
}

let searchTimer = null;
$('account-search').addEventListener('input', () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(async () => {
    try {
      await loadAccounts($('account-search').value.trim());
      await loadReport();
    } catch (err) {
      handleError(err);
    }
  }, 250);
});
$('account').addEventListener('change', () => void loadReport());
$('month').addEventListener('change', () => void loadReport());
$('filters').addEventListener('submit', (event) => event.preventDefault());

function monthRange(month) {
  const [year, m] = month.split('-').map(Number);
  const from = new Date(Date.UTC(year, m - 1, 1));
  const to = new Date(Date.UTC(year, m, 1));
  return { from: from.toISOString(), to: to.toISOString(), days: Math.round((to - from) / 86400000) };
}

// ---- the report ----------------------------------------------------------------------------

async function loadReport() {
  const accountId = $('account').value;
  const month = $('month').value;
  if (!accountId || !/^\d{4}-\d{2}$/.test(month)) {
    $('report').hidden = true;
    return;
  }
  const seq = ++loadSeq;
  location.hash = new URLSearchParams({ account: accountId, month }).toString();
  const range = monthRange(month);
  setStatus('Loading…');
  $('report').setAttribute('aria-busy', 'true');
  try {
    const id = encodeURIComponent(accountId);
    const period = query({ from: range.from, to: range.to });
    const [account, usage, upstreams] = await Promise.all([
      api(`/admin/v1/accounts/${id}`),
      api(`/admin/v1/accounts/${id}/usage?${period}`),
      api('/admin/v1/upstreams'),
    ]);
    if (seq !== loadSeq) return;
    renderAccount(account);
    $('period').textContent = month;
    renderTotals(usage);
    chart($('daily-chart'), usage.daily, month, range.days);
    renderByEndpoint(usage.by_endpoint);
    renderByKey(usage.by_key);
    renderByModel(usage.by_model);
    renderByDeployment(usage.by_deployment);
    renderUpstreams(upstreams);
    renderLatest(usage, { accountId, from: range.from, to: range.to, onError: handleError });
    setStatus(`Updated ${new Date().toISOString().slice(11, 19)} UTC`);
    $('report').hidden = false;
    $('report').setAttribute('aria-busy', 'false');
    document.body.dataset.loaded = `${accountId}/${month}`;
  } catch (err) {
    if (seq === loadSeq) handleError(err);
  }
}

// The statement of the account and month on screen (issue 35): every ledger movement, reconciled, as CSV.
$('statement-csv').addEventListener('click', () => {
  const accountId = $('account').value;
  const month = $('month').value;
  if (!accountId || !/^\d{4}-\d{2}$/.test(month)) return;
  const range = monthRange(month);
  download(`/admin/v1/accounts/${encodeURIComponent(accountId)}/statement?${query({ from: range.from, to: range.to, format: 'csv' })}`).catch(handleError);
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
