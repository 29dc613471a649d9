// The page's operator actions (DESIGN.md 12.5): each is confirmed in a modal dialog before it is sent, and its answer or
// the API's error is shown next to the form it came from. A new key's secret is shown once, in its own dialog, and
// forgotten when that dialog closes.
import { $, element, facts } from './dom.js';

/** Focus goes back to `node` when it is still on the page and shown; else to `fallback`. */
export function restoreFocus(node, fallback) {
  const target = node && node.isConnected && !node.closest('[hidden]') ? node : fallback;
  if (target && typeof target.focus === 'function') target.focus();
}

/**
 * Asks to confirm an action: `title`, `lines` ([term, value] pairs saying what will change), the confirm button's
 * `confirmLabel`, and optionally one `field` filled in the dialog (a rotation's grace period). Resolves null when
 * cancelled (Cancel or Escape), else { value } (the field's value). Focus goes back to what had it.
 */
export function confirmAction({ title, lines, confirmLabel = 'Confirm', field = null, danger = false }) {
  const dialog = $('confirm-dialog');
  const form = $('confirm-form');
  const back = document.activeElement;
  $('confirm-title').textContent = title;
  facts($('confirm-summary'), lines);
  let input = null;
  if (field) {
    const { value, min, max, step } = field;
    input = element('input', { id: 'confirm-input', name: 'value', type: 'number', required: true, value, min, max, step });
    const hint = element('p', { id: 'confirm-input-hint', className: 'hint', textContent: field.hint || '' });
    input.setAttribute('aria-describedby', hint.id);
    $('confirm-field').replaceChildren(element('label', { htmlFor: input.id, textContent: field.label }), input, hint);
  } else {
    $('confirm-field').replaceChildren();
  }
  $('confirm-ok').textContent = confirmLabel;
  $('confirm-ok').classList.toggle('danger', danger);
  return new Promise((resolve) => {
    const finish = (result) => {
      form.removeEventListener('submit', onSubmit);
      $('confirm-cancel').removeEventListener('click', onCancel);
      dialog.removeEventListener('cancel', onEscape);
      dialog.close();
      $('confirm-field').replaceChildren();
      restoreFocus(back);
      resolve(result);
    };
    // The browser has checked the field (type, min, max, step) before a submit reaches here.
    const onSubmit = (event) => {
      event.preventDefault();
      finish({ value: input ? input.value : undefined });
    };
    const onCancel = () => finish(null);
    const onEscape = (event) => {
      event.preventDefault();
      finish(null);
    };
    form.addEventListener('submit', onSubmit);
    $('confirm-cancel').addEventListener('click', onCancel);
    dialog.addEventListener('cancel', onEscape);
    dialog.showModal();
    (input || (danger ? $('confirm-cancel') : $('confirm-ok'))).focus();
  });
}

/**
 * Shows a new key's full secret, once: with a copy button and the warning that it cannot be shown again. Closing the
 * dialog (Close or Escape) takes the secret out of the page. Resolves once closed.
 */
export function showSecret(title, secret) {
  const dialog = $('secret-dialog');
  const back = document.activeElement;
  $('secret-title').textContent = title;
  $('secret-value').textContent = secret;
  $('secret-copied').textContent = '';
  return new Promise((resolve) => {
    const onCopy = async () => {
      try {
        await navigator.clipboard.writeText(secret);
        $('secret-copied').textContent = 'Copied to the clipboard.';
      } catch {
        // No clipboard (an insecure origin, or refused): the key is selected for the operator to copy.
        getSelection().selectAllChildren($('secret-value'));
        $('secret-copied').textContent = 'Could not copy: the key is selected, copy it with the keyboard.';
      }
    };
    const onClose = (event) => {
      if (event) event.preventDefault();
      $('secret-copy').removeEventListener('click', onCopy);
      $('secret-close').removeEventListener('click', onClose);
      dialog.removeEventListener('cancel', onClose);
      $('secret-value').textContent = '';
      $('secret-copied').textContent = '';
      getSelection().removeAllRanges();
      dialog.close();
      restoreFocus(back);
      resolve();
    };
    $('secret-copy').addEventListener('click', onCopy);
    $('secret-close').addEventListener('click', onClose);
    dialog.addEventListener('cancel', onClose);
    dialog.showModal();
    $('secret-copy').focus();
  });
}

/** The alert (errors) and status (results) of a form, made once so that screen readers follow them. */
function messages(box) {
  let error = box.querySelector(':scope > .form-error');
  let ok = box.querySelector(':scope > .form-ok');
  if (!error) {
    error = element('p', { className: 'form-error error', hidden: true });
    error.setAttribute('role', 'alert');
    ok = element('p', { className: 'form-ok', hidden: true });
    ok.setAttribute('role', 'status');
    box.append(error, ok);
  }
  return { error, ok };
}

export function showError(box, text) {
  const { error, ok } = messages(box);
  ok.hidden = true;
  ok.textContent = '';
  error.textContent = text;
  error.hidden = false;
}

export function showResult(box, text) {
  const { error, ok } = messages(box);
  error.hidden = true;
  error.textContent = '';
  ok.textContent = text;
  ok.hidden = false;
}

export function clearMessages(box) {
  const { error, ok } = messages(box);
  for (const p of [error, ok]) {
    p.textContent = '';
    p.hidden = true;
  }
}

/**
 * One action: confirmed (`confirm`: confirmAction's options), then `request(value)` sent; `describe(answer)` says in
 * `box` what was done, or the API's error is shown there. Resolves the answer, or null (cancelled or refused).
 */
export async function act(box, confirm, request, describe) {
  clearMessages(box);
  const confirmed = await confirmAction(confirm);
  if (!confirmed) return null;
  box.setAttribute('aria-busy', 'true');
  try {
    const answer = await request(confirmed.value);
    showResult(box, describe(answer));
    return answer;
  } catch (err) {
    showError(box, err.status === 401 ? 'The admin token was refused; sign in again.' : `Refused: ${err.message}`);
    return null;
  } finally {
    box.setAttribute('aria-busy', 'false');
  }
}
