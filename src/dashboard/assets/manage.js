// Keys and account management in the page (DESIGN.md 12.5, issue 48): create (the secret shown once), edit, rotate and
// revoke keys; add credits, set the monthly limit, the rate limits and the low-credits alert. Each action is confirmed
// before it is sent, shows its answer or the API's error beside its form, and reloads the whole report at once
// (refreshReport), whose account facts, usage and the audit of recent admin actions then show it.
import { api, query, send } from './api.js';
import { $, element, utcTime } from './dom.js';
import { configureAccountActions, currentAccount, forgetAccountForms, renderAccountForms } from './account-actions.js';
import { act, clearMessages, restoreFocus, showResult, showSecret } from './forms.js';
import { apiValue, fillKeyForm, keyFieldValues, keyFieldInputs, keyLabel, keyRows, KEY_FIELDS, readKeyForm, shownValue } from './keys.js';
import { isCurrent, loadPanel, refreshReport } from './panels.js';

const AUDIT_SHOWN = 20;

$('key-edit-fields').replaceChildren(...keyFieldInputs('edit'));
$('key-create-fields').replaceChildren(...keyFieldInputs('create'));

let sel = null;
let keys = [];
let editing = null;

/** Loads the three management panels of `selection` (an account's report), each on its own. */
export async function loadManage(selection) {
  if (!sel || sel.accountId !== selection.accountId) forgetAccount();
  sel = selection;
  // The report's one read of the keys (sel.keys) feeds the keys panel, and names the keys of the audit's rows.
  const both = Promise.all([selection.keys, api(`/admin/v1/audit?${query({ account_id: selection.accountId, limit: AUDIT_SHOWN })}`)]);
  both.catch(() => {});
  const shown = await Promise.all([
    loadPanel($('keys-panel'), selection, () => selection.keys, renderKeys),
    loadPanel($('account-actions'), selection, () => selection.account, renderAccountForms),
    loadPanel($('audit-panel'), selection, () => both, ([keyList, audit]) => renderAudit(audit.data, keyList)),
  ]);
  if (isCurrent(selection)) $('keys-panel').dataset.loaded = `${selection.id}`;
  return shown.every(Boolean);
}

/** Another account: nothing of the previous one stays (a form's message, an open editor, its values). */
function forgetAccount() {
  forgetAccountForms();
  keys = [];
  closeEditor();
  for (const form of document.querySelectorAll('#keys-panel form, #account-actions form')) {
    form.reset();
    clearMessages(form);
  }
  clearMessages($('keys-actions'));
}

/** After an action: the whole report again, then focus back where it was (or on the panel's heading). */
async function reflect(focus, fallback) {
  await refreshReport();
  restoreFocus(typeof focus === 'function' ? focus() : focus, fallback);
}
configureAccountActions({ reflect });

function findAction(button) {
  return document.querySelector(`#keys button[data-action="${button.dataset.action}"][data-key-id="${button.dataset.keyId}"]`);
}

// ---- keys ------------------------------------------------------------------------------------------------------------

function renderKeys(list) {
  keys = list;
  $('keys-for').textContent = sel.accountName || '';
  const tbody = $('keys').tBodies[0];
  if (list.length === 0) {
    tbody.replaceChildren(element('tr', {}, [element('td', { colSpan: 7, className: 'empty', textContent: 'No keys yet: create one below.' })]));
  } else {
    tbody.replaceChildren(...keyRows(list));
  }
  if (editing && !list.some((k) => k.id === editing.id && !k.revoked_at)) closeEditor();
}

$('keys').addEventListener('click', (event) => {
  const button = event.target.closest('button[data-action]');
  if (!button) return;
  const key = keys.find((k) => k.id === button.dataset.keyId);
  if (!key) return;
  if (button.dataset.action === 'edit') openEditor(key, button);
  if (button.dataset.action === 'rotate') void rotate(key, button);
  if (button.dataset.action === 'revoke') void revoke(key, button);
});

async function rotate(key, button) {
  const answer = await act(
    $('keys-actions'),
    {
      title: `Rotate key ${keyLabel(key)}?`,
      lines: [
        ['Key', keyLabel(key)],
        ['What happens', 'A new key replaces it, with the same limit, month spend, expiry and models; its secret is shown once.'],
      ],
      confirmLabel: 'Rotate',
      field: {
        label: 'Grace period (seconds)',
        value: '0',
        min: '0',
        max: '86400',
        step: '1',
        hint: 'How long the old key keeps working: 0 to 86400 seconds.',
      },
    },
    (grace) => send('POST', `/admin/v1/keys/${encodeURIComponent(key.id)}/rotate`, { grace_s: Number(grace) }),
    (created) => `Rotated: ${keyLabel(key)} is replaced by ${created.prefix}.`,
  );
  if (!answer) return;
  const reloaded = reflect(null);
  await showSecret(`New key ${keyLabel(answer)}, replacing ${key.prefix}`, answer.key);
  await reloaded;
  restoreFocus(findAction(button) || $('keys-title'));
}

async function revoke(key, button) {
  const answer = await act(
    $('keys-actions'),
    {
      title: `Revoke key ${keyLabel(key)}?`,
      lines: [
        ['Key', keyLabel(key)],
        ['What happens', 'Every request with it is refused (401) within 2 seconds. This cannot be undone.'],
      ],
      confirmLabel: 'Revoke',
      danger: true,
    },
    () => send('DELETE', `/admin/v1/keys/${encodeURIComponent(key.id)}`),
    (revoked) => `Revoked ${keyLabel(revoked)}.`,
  );
  if (answer) await reflect(() => findAction(button), $('keys-title'));
}

// The editor: one key's controls, shown under the table; only the fields changed are sent (null clears one).
function openEditor(key, button) {
  editing = { id: key.id, initial: keyFieldValues(key), button };
  const form = $('key-edit-form');
  clearMessages(form);
  fillKeyForm(form, editing.initial);
  $('key-edit-title').textContent = `Edit key ${keyLabel(key)}`;
  form.hidden = false;
  form.elements.name.focus();
}

function closeEditor() {
  const back = editing && editing.button;
  editing = null;
  $('key-edit-form').hidden = true;
  return back;
}

$('key-edit-cancel').addEventListener('click', () => restoreFocus(closeEditor(), $('keys-title')));
$('key-edit-form').addEventListener('keydown', (event) => {
  if (event.key === 'Escape') {
    event.preventDefault();
    restoreFocus(closeEditor(), $('keys-title'));
  }
});

$('key-edit-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  if (!editing) return;
  const key = keys.find((k) => k.id === editing.id);
  const now = readKeyForm(form);
  const changed = KEY_FIELDS.filter(({ name }) => now[name] !== editing.initial[name]);
  if (changed.length === 0) return showResult(form, 'Nothing to save: no field was changed.');
  const body = Object.fromEntries(changed.map(({ name }) => [name, apiValue(name, now[name])]));
  const answer = await act(
    form,
    {
      title: `Change key ${keyLabel(key)}?`,
      lines: changed.map(({ name, label }) => [label, `${shownValue(name, editing.initial[name])} → ${shownValue(name, now[name])}`]),
      confirmLabel: 'Save',
    },
    () => send('PATCH', `/admin/v1/keys/${encodeURIComponent(key.id)}`, body),
    (updated) => `Saved: ${changed.map((f) => f.label.toLowerCase()).join(', ')} of ${keyLabel(updated)}.`,
  );
  if (!answer) return;
  // The form shows what the API now holds ("12.5" reads back as "12.500000"), the base of the next change.
  editing.initial = keyFieldValues(answer);
  fillKeyForm(form, editing.initial);
  await reflect(form.querySelector('button[type=submit]'), $('keys-title'));
});

$('key-create-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  const values = readKeyForm(form);
  const body = Object.fromEntries(KEY_FIELDS.filter(({ name }) => values[name] !== '').map(({ name }) => [name, apiValue(name, values[name])]));
  const answer = await act(
    form,
    {
      title: `Create a key for ${(currentAccount() || sel).name || sel.accountName}?`,
      lines: KEY_FIELDS.map(({ name, label }) => [label, shownValue(name, values[name])]),
      confirmLabel: 'Create',
    },
    () => send('POST', `/admin/v1/accounts/${encodeURIComponent(sel.accountId)}/keys`, body),
    (created) => `Created ${keyLabel(created)}.`,
  );
  if (!answer) return;
  form.reset();
  const reloaded = reflect(null);
  await showSecret(`New key ${keyLabel(answer)}`, answer.key);
  await reloaded;
  restoreFocus(form.querySelector('button[type=submit]'));
});

// ---- the audit -------------------------------------------------------------------------------------------------------

function renderAudit(rows, list) {
  const byId = new Map(list.map((k) => [k.id, k]));
  const tbody = $('audit').tBodies[0];
  if (rows.length === 0) {
    const none = element('td', { colSpan: 5, className: 'empty', textContent: 'No admin actions on this account yet.' });
    tbody.replaceChildren(element('tr', {}, [none]));
    return;
  }
  tbody.replaceChildren(
    ...rows.map((row) => {
      const key = row.key_id && byId.get(row.key_id);
      const cell = (label, col, text, title = '') => element('td', { textContent: text, title, dataset: { col, label } });
      return element('tr', { dataset: { auditId: row.id, action: row.action } }, [
        cell('Time (UTC)', 'time', utcTime(row.created_at)),
        cell('Who', 'actor', row.actor),
        cell('Action', 'action', row.action),
        cell('Key', 'key', key ? keyLabel(key) : row.key_id ? row.key_id.slice(0, 8) : '', row.key_id || ''),
        cell('Details', 'details', details(row.details, byId), `request ${row.request_id}`),
      ]);
    }),
  );
}

/** The body's fields: "monthly_limit_usd: 8, models: dev-echo"; a rotation's old key by its prefix when known. */
function details(fields, byId) {
  return Object.entries(fields || {})
    .map(([name, value]) => {
      if (name === 'replaced_key_id' && byId.has(value)) return `replaced ${keyLabel(byId.get(value))}`;
      return `${name}: ${Array.isArray(value) ? value.join(' ') : value === null ? 'null' : String(value)}`;
    })
    .join(', ');
}
