// The cells of one row of "Latest requests" (latest.js): its time, request id (with a copy button), key name and
// prefix, model, endpoint and streamed mark, status and error code, usage, cost and latency.
import { element, integer, seconds, utcTime } from './dom.js';
import { revokedMark, TOKEN_CLASSES } from './tables.js';

const COPIED_MS = 1500;

/** The row's cells for tableRow (dom.js); `keys` (key id → { name, prefix, revoked_at }) marks a revoked key. */
export function cells(r, keys) {
  return [
    { text: utcTime(r.created_at).slice(5), col: 'time', title: r.created_at },
    { text: '', col: 'request_id', extra: requestId(r.request_id) },
    { text: '', col: 'key', extra: keyParts(r, keys) },
    { text: r.model === null ? '' : r.model, col: 'model', title: r.model || '', extra: r.model === null ? [element('span', { className: 'no-model', textContent: modelText(r) })] : [] },
    { text: r.endpoint, col: 'endpoint', extra: r.streamed ? [' ', element('span', { className: 'streamed', textContent: 'streamed', dataset: { col: 'streamed' } })] : [] },
    { text: '', col: 'result', extra: [part('status', String(r.status)), r.error_code ? ' ' : '', part('error_code', r.error_code || '')] },
    { text: '', col: 'usage', extra: usageParts(r), num: true },
    { text: '', col: 'cost_usd', extra: [part('cost', r.cost_usd), ...pricedParts(r)], num: true },
    { text: `${integer.format(r.latency_ms)} ms`, col: 'latency_ms', num: true },
  ];
}

/**
 * Why a request has no model: the burst limit answers before the body is read (DESIGN.md section 5), so its 429s
 * never know it; other requests without one asked for none (GET /v1/models) or sent a body that named none.
 */
export function modelText(r) {
  return r.status === 429 && r.error_code === 'rate_limit_exceeded' ? 'unknown: refused before its body was read' : '(none)';
}

/** The key's name and prefix (two keys of one name are told apart by it), and a revoked key marked. */
export function keyParts(r, keys) {
  const known = keys.get(r.key_id);
  const name = r.key_name ?? (known ? known.name : null);
  const prefix = r.key_prefix || (known ? known.prefix : r.key_id);
  const label = name || '(unnamed)';
  // Spaces between the parts: where a narrow column may break the line.
  return [
    element('span', { className: 'clip key-name', textContent: label, title: label }),
    ' ',
    element('span', { className: 'key-prefix', textContent: prefix, dataset: { col: 'key_prefix' } }),
    ...revokedMark(known && known.revoked_at, true).flatMap((mark) => [' ', mark]),
  ];
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

/**
 * The id (selectable with one click: user-select all) and a copy button kept out of the Tab order (issue 48: the
 * keyboard path does not stop at every row's copy button; the id itself can be selected and copied).
 */
function requestId(id) {
  const code = element('code', { className: 'request-id', textContent: id });
  const button = element('button', { type: 'button', className: 'copy', textContent: 'Copy', title: `Copy ${id}`, tabIndex: -1, dataset: { copy: id } });
  button.setAttribute('aria-label', `Copy request id ${id}`);
  return [code, button];
}

// The clipboard API needs a secure context (https, or localhost); elsewhere the id is selected and copied.
export async function copy(button) {
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
