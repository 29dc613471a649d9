// What the page shows is what was asked (DESIGN.md 12.5): each card of a view is a panel that loads on its own, for
// one selection (an account, or none for the overview, and a period). A panel loading or failed never shows another
// selection's figures: its body is hidden until its own answer arrives, its heading says whose figures it will show,
// and its failure is announced and shown in the panel, the other panels going on.
let current = null;
let seq = 0;
let reload = () => {};
let signOut = () => {};

/**
 * A new selection: `{ accountId (null: the overview), accountName, from, to (YYYY-MM-DD, both inclusive), label,
 * period: { from, to } (ISO timestamps, `to` exclusive: what the API takes) }`. Answers still on their way for the
 * previous one are dropped when they arrive.
 */
export function select(selection) {
  current = { ...selection, id: ++seq };
  return current;
}

/** True while `sel` is the selection on screen. */
export function isCurrent(sel) {
  return current !== null && sel.id === current.id;
}

export function currentSelection() {
  return current;
}

/** Reloads the report on screen (after an action in the page, so that its effect shows at once). */
export function refreshReport() {
  return reload();
}

/** dashboard.js says how to reload the report and how to go back to sign-in (the admin token refused). */
export function configurePanels(options) {
  reload = options.reload;
  signOut = options.signOut;
}

/** "Dashboard customer, 2026-11": whose figures a panel shows. */
export function selectionTitle(sel) {
  return sel.accountId ? `${sel.accountName}, ${sel.label}` : `all accounts, ${sel.label}`;
}

/**
 * Loads one panel for `sel`: `load(sel)` fetches, `render(answer, sel)` fills the panel's `.panel-body`. The panel is
 * a section with `data-panel`, a heading holding a `.panel-for` span, a `.panel-state` paragraph and a `.panel-body`
 * (`panelParts` adds the missing ones). Resolves true when the panel shows `sel`'s figures.
 */
export async function loadPanel(section, sel, load, render) {
  const { body, state, forWhom } = panelParts(section);
  if (forWhom) forWhom.textContent = selectionTitle(sel);
  section.setAttribute('aria-busy', 'true');
  section.classList.add('panel-loading');
  section.classList.remove('panel-failed');
  body.hidden = true;
  showState(state, 'loading', `Loading ${selectionTitle(sel)}…`);
  let answer;
  try {
    answer = await load(sel);
  } catch (err) {
    if (!isCurrent(sel)) return false;
    if (err.status === 401) {
      signOut('The admin token was refused; sign in again.');
      return false;
    }
    section.setAttribute('aria-busy', 'false');
    section.classList.remove('panel-loading');
    section.classList.add('panel-failed');
    showState(state, 'error', `Could not load this for ${selectionTitle(sel)}: ${err.message}`);
    return false;
  }
  if (!isCurrent(sel)) return false;
  render(answer, sel);
  // A table wider than its card scrolls inside it: the scroll box takes focus, so that arrow keys scroll it.
  for (const box of section.querySelectorAll('.table-scroll:not([tabindex])')) box.tabIndex = 0;
  section.setAttribute('aria-busy', 'false');
  section.classList.remove('panel-loading');
  showState(state, 'ok', '');
  body.hidden = false;
  return true;
}

/** The parts of a panel section; a section written without them gets them (the heading first, then state, then body). */
export function panelParts(section) {
  let state = section.querySelector(':scope > .panel-state');
  let body = section.querySelector(':scope > .panel-body');
  const heading = section.querySelector(':scope > h2, :scope > h3');
  if (!body) {
    body = document.createElement('div');
    body.className = 'panel-body';
    body.append(...[...section.childNodes].filter((node) => node !== heading));
    section.append(body);
  }
  if (!state) {
    state = document.createElement('p');
    state.className = 'panel-state';
    section.insertBefore(state, body);
  }
  return { body, state, forWhom: heading && heading.querySelector('.panel-for') };
}

// A failure is an alert (read out at once); loading is a polite status. Both are in the panel, next to what failed.
function showState(state, kind, text) {
  state.setAttribute('role', kind === 'error' ? 'alert' : 'status');
  state.className = `panel-state ${kind === 'error' ? 'error' : ''}`;
  state.textContent = text;
  state.hidden = text === '';
}

/** Hides every panel of a view until its next load (a view left, or a selection that cannot load). */
export function clearPanels(view) {
  for (const section of view.querySelectorAll('[data-panel]')) {
    const { body, state } = panelParts(section);
    body.hidden = true;
    showState(state, 'ok', '');
  }
}
