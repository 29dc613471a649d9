// The account's actions in the page (DESIGN.md 12.5): add credits, set or remove the monthly limit, its own rpm and tpm
// and its low-credits alert. Each is confirmed, then its answer or the API's error is shown beside its form.
import { send } from './api.js';
import { $ } from './dom.js';
import { act, showResult } from './forms.js';

let account = null;
let reflect = async () => {};

/** manage.js says how to show an action's effect (the report reloaded, focus back). */
export function configureAccountActions(options) {
  reflect = options.reflect;
}

export function currentAccount() {
  return account;
}

export function forgetAccountForms() {
  account = null;
}

export function renderAccountForms(answer) {
  account = answer;
  $('account-actions-for').textContent = answer.name;
  $('credits-now').textContent = `Credits now: $${answer.credits_usd} ($${answer.reserved_usd} held by requests in flight).`;
  $('spending-limit').value = answer.monthly_limit_usd === null ? '' : answer.monthly_limit_usd;
  const limit = answer.monthly_limit_usd === null ? 'none' : `$${answer.monthly_limit_usd}`;
  $('spending-limit-now').textContent = `Spent this month: $${answer.month_spend_usd}; limit now: ${limit}. Empty: no limit.`;
  const form = $('account-limits-form');
  for (const field of ACCOUNT_FIELDS) form.elements[field.name].value = field.now(answer);
  form.elements.rpm.placeholder = answer.rate_limits.rpm !== null && answer.rpm === null ? `default: ${answer.rate_limits.rpm}` : 'default';
  form.elements.tpm.placeholder = answer.rate_limits.tpm !== null && answer.tpm === null ? `default: ${answer.rate_limits.tpm}` : 'default';
}

const path = (suffix = '') => `/admin/v1/accounts/${encodeURIComponent(account.id)}${suffix}`;
const submitOf = (form) => form.querySelector('button[type=submit]');

$('credits-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  if (!account) return;
  const amount = form.elements.amount_usd.value.trim();
  const answer = await act(
    form,
    {
      title: `Add $${amount} of credits to ${account.name}?`,
      lines: [['Account', account.name], ['Add', `$${amount}`], ['Credits now', `$${account.credits_usd}`]],
      confirmLabel: 'Add credits',
    },
    () => send('POST', path('/credits'), { amount_usd: amount }),
    (updated) => `Added $${amount}: credits are now $${updated.credits_usd}.`,
  );
  if (!answer) return;
  form.elements.amount_usd.value = '';
  await reflect(form.elements.amount_usd, $('account-actions-title'));
});

$('spending-limit-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  if (!account) return;
  const limit = form.elements.monthly_limit_usd.value.trim();
  const before = account.monthly_limit_usd === null ? 'none' : `$${account.monthly_limit_usd}`;
  const answer = await act(
    form,
    {
      title: limit === '' ? `Remove the monthly limit of ${account.name}?` : `Set the monthly limit of ${account.name} to $${limit}?`,
      lines: [
        ['Account', account.name],
        ['Monthly limit', `${before} → ${limit === '' ? 'none' : `$${limit}`}`],
        ['Spent this month', `$${account.month_spend_usd}`],
      ],
      confirmLabel: limit === '' ? 'Remove the limit' : 'Set the limit',
    },
    () => send('PUT', path('/spending-limit'), { monthly_limit_usd: limit === '' ? null : limit }),
    (updated) => (updated.monthly_limit_usd === null ? 'The monthly limit is removed.' : `The monthly limit is now $${updated.monthly_limit_usd}.`),
  );
  if (answer) await reflect(submitOf(form), $('account-actions-title'));
});

// Only the fields changed are sent; an empty one is null (a rate back to the default, no alert).
const ACCOUNT_FIELDS = [
  { name: 'rpm', label: 'Requests per minute', now: (a) => (a.rpm === null ? '' : String(a.rpm)), empty: 'the default' },
  { name: 'tpm', label: 'Tokens per minute', now: (a) => (a.tpm === null ? '' : String(a.tpm)), empty: 'the default' },
  { name: 'low_credits_usd', label: 'Low-credits alert', now: (a) => a.low_credits_usd ?? '', empty: 'none', usd: true },
];

$('account-limits-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  if (!account) return;
  const text = (f) => form.elements[f.name].value.trim();
  const changed = ACCOUNT_FIELDS.filter((f) => text(f) !== f.now(account));
  if (changed.length === 0) return showResult(form, 'Nothing to save: no field was changed.');
  const shown = (f, value) => (value === '' ? f.empty : f.usd ? `$${value}` : value);
  const body = Object.fromEntries(changed.map((f) => [f.name, text(f) === '' ? null : f.usd ? text(f) : Number(text(f))]));
  const answer = await act(
    form,
    {
      title: `Change the limits of ${account.name}?`,
      lines: changed.map((f) => [f.label, `${shown(f, f.now(account))} → ${shown(f, text(f))}`]),
      confirmLabel: 'Save',
    },
    () => send('PATCH', path(), body),
    () => `Saved: ${changed.map((f) => f.label.toLowerCase()).join(', ')}.`,
  );
  if (answer) await reflect(submitOf(form), $('account-actions-title'));
});
