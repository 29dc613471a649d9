// The Keys panel (DESIGN.md 12.5): every key of the account, used or not, with its controls, its marks (revoked,
// rotated and replaced, in its grace period, expiring within 7 days, expired, restricted to some models) and its
// month's spend against its own monthly limit as a headroom bar. Amounts are the API's decimal strings.
import { element, integer, utcTime } from './dom.js';
import { bar, usedShare } from './headroom.js';

const DAY_MS = 86_400_000;
const EXPIRING_DAYS = 7;

/** "build-bot sk-gw-ab12…": a key's name and prefix, which tell two keys of one name apart. */
export function keyLabel(key) {
  return `${key.name || '(unnamed)'} ${key.prefix}`;
}

/** A key's marks, each { kind, text, title? }. */
export function keyMarks(key, replacedBy, now = Date.now()) {
  const marks = [];
  if (key.revoked_at) {
    marks.push({ kind: 'revoked', text: `revoked ${utcTime(key.revoked_at).slice(0, 16)} UTC`, title: `Revoked ${key.revoked_at}` });
  }
  const expires = key.expires_at === null ? null : Date.parse(key.expires_at);
  if (replacedBy) {
    marks.push({ kind: 'rotated', text: `replaced by ${replacedBy.prefix}`, title: `Rotated: replaced by ${keyLabel(replacedBy)}` });
    if (!key.revoked_at && expires !== null && expires > now) {
      marks.push({ kind: 'grace', text: `grace until ${utcTime(key.expires_at).slice(0, 16)} UTC`, title: `Still works until ${key.expires_at}` });
    }
  }
  if (!key.revoked_at && expires !== null && !(replacedBy && expires > now)) {
    if (expires <= now) marks.push({ kind: 'expired', text: 'expired', title: `Expired ${key.expires_at}` });
    else if (expires - now <= EXPIRING_DAYS * DAY_MS) {
      const days = Math.ceil((expires - now) / DAY_MS);
      marks.push({ kind: 'expiring', text: `expires in ${days} day${days === 1 ? '' : 's'}`, title: `Expires ${key.expires_at}` });
    }
  }
  if (key.models) {
    const n = key.models.length;
    marks.push({ kind: 'restricted', text: `${n} model${n === 1 ? '' : 's'} only`, title: key.models.join(', ') });
  }
  return marks;
}

/** The key's spend this UTC month against its own limit: a bar with its % ("$3.20 of $8.00"), or the spend alone. */
export function keyHeadroom(key) {
  if (key.monthly_limit_usd === null) return element('span', { className: 'no-limit', textContent: `$${key.month_spend_usd} this month, no limit` });
  return bar('Key limit', usedShare(key.month_spend_usd, key.monthly_limit_usd), `$${key.month_spend_usd} of $${key.monthly_limit_usd}`);
}

/** A key's own rpm and tpm, else the default in force (or none). */
export function keyRates(key) {
  const one = (own, inForce, unit) => {
    if (own !== null) return `${integer.format(own)} ${unit}`;
    return inForce !== null ? `${integer.format(inForce)} ${unit} (default)` : `no ${unit} limit`;
  };
  return `${one(key.rpm, key.rate_limits.rpm, 'rpm')}, ${one(key.tpm, key.rate_limits.tpm, 'tpm')}`;
}

/**
 * The table's rows: one per key, each cell labelled (`data-label`, the card's label on a phone), with Edit, Rotate and
 * Revoke for a key that is not revoked (Rotate only once: a replaced key is not rotated again).
 */
export function keyRows(keys) {
  const byId = new Map(keys.map((k) => [k.id, k]));
  return keys.map((key) => {
    const newer = key.replaced_by;
    const replacedBy = newer ? byId.get(newer) || { prefix: newer.slice(0, 8), name: null } : null;
    const marks = keyMarks(key, replacedBy);
    const cell = (label, col, children) => {
      const td = element('td', { dataset: { col, label } }, children);
      return td;
    };
    const actions = [];
    if (!key.revoked_at) {
      actions.push(actionButton('Edit', 'edit', key));
      if (!replacedBy) actions.push(actionButton('Rotate', 'rotate', key));
      actions.push(actionButton('Revoke', 'revoke', key, 'danger'));
    }
    return element('tr', { dataset: { keyId: key.id, marks: marks.map((m) => m.kind).join(' ') }, className: key.revoked_at ? 'revoked-key' : '' }, [
      cell('Key', 'key', [
        element('span', { className: 'key-name', textContent: key.name || '(unnamed)' }),
        element('span', { className: 'key-prefix', textContent: key.prefix }),
        element(
          'span',
          { className: 'key-marks' },
          marks.map((m) => element('span', { className: `key-mark mark-${m.kind}`, textContent: m.text, title: m.title || '' })),
        ),
      ]),
      cell('This month / limit', 'limit', [keyHeadroom(key)]),
      cell('Expires (UTC)', 'expires', [key.expires_at ? utcTime(key.expires_at).slice(0, 16) : 'never']),
      cell('Models', 'models', [key.models ? key.models.join(', ') : 'all']),
      cell('Rate limits', 'rates', [keyRates(key)]),
      cell('Created (UTC)', 'created', [utcTime(key.created_at).slice(0, 16)]),
      cell('Actions', 'actions', actions),
    ]);
  });
}

function actionButton(text, action, key, extra = '') {
  const className = `small ${action === 'edit' ? 'secondary' : ''} ${extra}`.trim();
  const button = element('button', { type: 'button', className, textContent: text, dataset: { action, keyId: key.id } });
  button.setAttribute('aria-label', `${text} key ${keyLabel(key)}`);
  return button;
}

// ---- the key forms (create and edit share their fields) ------------------------------------------------------------

/** A key's controls, as the edit and create forms ask for them (both forms are built from this list). */
export const KEY_FIELDS = [
  { name: 'name', label: 'Name', field: 'Name', input: { type: 'text', maxLength: 200, autocomplete: 'off' } },
  {
    name: 'monthly_limit_usd',
    label: 'Monthly limit',
    field: 'Monthly limit (USD)',
    hint: 'Empty: no limit of its own.',
    input: { type: 'number', min: '0', step: '0.000001', inputMode: 'decimal' },
    money: true,
  },
  { name: 'expires_at', label: 'Expires', field: 'Expires at (UTC)', hint: 'Empty: never.', input: { type: 'datetime-local' } },
  { name: 'models', label: 'Models', field: 'Models', hint: 'Catalog ids, separated by commas. Empty: all models.', input: { type: 'text', autocomplete: 'off' } },
  { name: 'rpm', label: 'Requests per minute', field: 'Requests per minute (rpm)', hint: 'Empty: the default.', input: { type: 'number', min: '1', max: '2147483647', step: '1' } },
  { name: 'tpm', label: 'Tokens per minute', field: 'Tokens per minute (tpm)', hint: 'Empty: the default.', input: { type: 'number', min: '1', max: '2147483647', step: '1' } },
];

/** The labelled fields of a key form; `prefix` keeps the ids of the edit and create forms apart. */
export function keyFieldInputs(prefix) {
  return KEY_FIELDS.map((f) => {
    const id = `${prefix}-${f.name.replace(/_/g, '-')}`;
    const input = element('input', { id, name: f.name, ...f.input });
    const parts = [element('label', { htmlFor: id, textContent: f.field }), input];
    if (f.hint) {
      input.setAttribute('aria-describedby', `${id}-hint`);
      parts.push(element('p', { id: `${id}-hint`, className: 'hint', textContent: f.hint }));
    }
    return element('div', {}, parts);
  });
}

/** A key's controls as the form's fields hold them ("" for none). */
export function keyFieldValues(key) {
  return {
    name: key.name || '',
    monthly_limit_usd: key.monthly_limit_usd === null ? '' : key.monthly_limit_usd,
    expires_at: key.expires_at === null ? '' : key.expires_at.slice(0, 16),
    models: key.models ? key.models.join(', ') : '',
    rpm: key.rpm === null ? '' : String(key.rpm),
    tpm: key.tpm === null ? '' : String(key.tpm),
  };
}

export function fillKeyForm(form, values) {
  for (const { name } of KEY_FIELDS) form.elements[name].value = values[name];
}

export function readKeyForm(form) {
  return Object.fromEntries(KEY_FIELDS.map(({ name }) => [name, form.elements[name].value.trim()]));
}

/** A field's text as the API takes it: an empty field is null (none, never, all models, the default). */
export function apiValue(name, text) {
  if (text === '') return null;
  if (name === 'expires_at') return `${text.length === 16 ? `${text}:00` : text}Z`; // datetime-local, read as UTC
  if (name === 'models') return text.split(/[\s,]+/).filter(Boolean);
  if (name === 'rpm' || name === 'tpm') return Number(text);
  return text;
}

const NONE = { name: 'no name', monthly_limit_usd: 'no limit', expires_at: 'never', models: 'all models', rpm: 'the default', tpm: 'the default' };

/** A field's text as the confirmation says it. */
export function shownValue(name, text) {
  if (text === '') return NONE[name];
  if (name === 'monthly_limit_usd') return `$${text}`;
  if (name === 'expires_at') return `${text.replace('T', ' ')} UTC`;
  return text;
}
