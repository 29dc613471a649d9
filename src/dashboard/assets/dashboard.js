'use strict';
// The usage dashboard. It reads the admin API with the admin token, which lives in sessionStorage
// only (gone when the tab closes). Every figure is shown as the API gives it: costs are the API's
// exact decimal strings, never recomputed with floating point.
(() => {
  const TOKEN_KEY = 'gateway.adminToken';
  const SVG = 'http://www.w3.org/2000/svg';
  const $ = (id) => document.getElementById(id);
  const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
  const UNKNOWN_MODEL = '(unknown models)';

  let token = sessionStorage.getItem(TOKEN_KEY);
  let loadSeq = 0;

  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.error && body.error.message) || `HTTP ${status}`);
      this.status = status;
      this.code = body && body.error && body.error.code;
    }
  }

  async function api(path) {
    const res = await fetch(path, { headers: { authorization: `Bearer ${token}` }, cache: 'no-store' });
    const body = await res.json().catch(() => null);
    if (!res.ok) throw new ApiError(res.status, body);
    return body;
  }

  // ---- sign in / out -------------------------------------------------------------------------

  function showSignIn(message) {
    token = null;
    sessionStorage.removeItem(TOKEN_KEY);
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
    sessionStorage.setItem(TOKEN_KEY, token);
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
    token = $('admin-token').value.trim();
    if (token) void enter();
  });
  $('sign-out').addEventListener('click', () => showSignIn(''));

  // ---- account and month pickers -------------------------------------------------------------

  async function loadAccounts(query) {
    const accounts = await api(`/dashboard/api/accounts${query ? `?q=${encodeURIComponent(query)}` : ''}`);
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
    if (accounts.length === 0) setStatus(query ? `No account matches “${query}”.` : 'No accounts yet.');
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
      const query = `from=${encodeURIComponent(range.from)}&to=${encodeURIComponent(range.to)}`;
      const [account, usage] = await Promise.all([api(`/admin/v1/accounts/${id}`), api(`/admin/v1/accounts/${id}/usage?${query}`)]);
      if (seq !== loadSeq) return;
      render(account, usage, month, range.days);
      setStatus(`Updated ${new Date().toISOString().slice(11, 19)} UTC`);
      $('report').hidden = false;
      $('report').setAttribute('aria-busy', 'false');
      document.body.dataset.loaded = `${accountId}/${month}`;
    } catch (err) {
      if (seq === loadSeq) handleError(err);
    }
  }

  function handleError(err) {
    if (err.status === 401) return showSignIn('The admin token was refused; sign in again.');
    setStatus(`Error: ${err.message}`);
  }

  function setStatus(text) {
    $('status').textContent = text;
  }

  function render(account, usage, month, days) {
    $('account-name').textContent = account.name;
    facts($('account-facts'), [
      ['Account id', account.id],
      ['Credits', `$${account.credits_usd}`],
      ['Reserved', `$${account.reserved_usd}`],
      ['Spend this month', `$${account.month_spend_usd}`],
      ['Monthly limit', account.monthly_limit_usd === null ? 'none' : `$${account.monthly_limit_usd}`],
      ['Subscription', subscription(account.subscription)],
      ['Fair use this month', `${account.fair_use.used} / ${account.fair_use.allowance}`],
    ]);
    $('period').textContent = month;
    const t = usage.totals;
    facts($('totals'), [
      ['Requests', integer.format(t.requests)],
      ['Prompt tokens', integer.format(t.prompt_tokens)],
      ['Completion tokens', integer.format(t.completion_tokens)],
      ['Audio seconds', seconds(t.audio_seconds)],
      ['Speech characters', integer.format(t.input_chars)],
      ['Cost', `$${t.cost_usd}`],
    ]);
    const keyLabels = new Map(usage.by_key.map((k) => [k.key_id, k.key_name || k.key_prefix]));
    rows($('by-key'), usage.by_key, (k) => [
      { text: k.key_name || '(unnamed)', extra: k.key_prefix, col: 'key' },
      ...totalsCells(k),
    ], (k) => ({ keyId: k.key_id }));
    // Ids outside the catalog come as one row (unknown: true): whatever clients sent, never a row each.
    rows($('by-model'), usage.by_model, (m) => [{ text: modelLabel(m), col: 'model' }, ...totalsCells(m)], (m) => ({
      model: m.unknown ? UNKNOWN_MODEL : m.model === null ? '' : m.model,
    }));
    rows(
      $('latest'),
      usage.latest,
      (r) => [
        { text: r.created_at.replace('T', ' ').slice(0, 19), col: 'time' },
        { text: keyLabels.get(r.key_id) || r.key_id, col: 'key' },
        { text: r.model === null ? '' : r.model, col: 'model' },
        { text: r.endpoint, col: 'endpoint' },
        { text: String(r.status), col: 'status', num: true },
        { text: r.error_code || '', col: 'error_code' },
        { text: integer.format(r.prompt_tokens), col: 'prompt_tokens', num: true },
        { text: integer.format(r.completion_tokens), col: 'completion_tokens', num: true },
        { text: seconds(r.audio_seconds), col: 'audio_seconds', num: true },
        { text: r.cost_usd, col: 'cost_usd', num: true },
        { text: integer.format(r.latency_ms), col: 'latency_ms', num: true },
      ],
      (r) => ({ requestId: r.request_id }),
      (r) => (r.status >= 400 ? 'failed' : ''),
    );
    chart($('daily-chart'), usage.daily, month, days);
  }

  function totalsCells(t) {
    return [
      { text: integer.format(t.requests), col: 'requests', num: true },
      { text: integer.format(t.prompt_tokens), col: 'prompt_tokens', num: true },
      { text: integer.format(t.completion_tokens), col: 'completion_tokens', num: true },
      { text: seconds(t.audio_seconds), col: 'audio_seconds', num: true },
      { text: integer.format(t.input_chars), col: 'input_chars', num: true },
      { text: t.cost_usd, col: 'cost_usd', num: true },
    ];
  }

  function modelLabel(m) {
    if (m.unknown) return UNKNOWN_MODEL;
    return m.model === null ? '(none)' : m.model;
  }

  function seconds(value) {
    return Number(value).toFixed(3);
  }

  function subscription(s) {
    if (s.status === 'none') return 'none';
    return s.ends_at ? `${s.status} until ${s.ends_at.slice(0, 10)}` : s.status;
  }

  function facts(dl, entries) {
    dl.replaceChildren(
      ...entries.map(([term, value]) => {
        const div = document.createElement('div');
        const dt = document.createElement('dt');
        const dd = document.createElement('dd');
        dt.textContent = term;
        dd.textContent = value;
        div.append(dt, dd);
        return div;
      }),
    );
  }

  function rows(table, items, cells, data, rowClass) {
    const body = table.tBodies[0];
    if (items.length === 0) {
      const tr = document.createElement('tr');
      const td = document.createElement('td');
      td.colSpan = table.tHead.rows[0].cells.length;
      td.className = 'empty';
      td.textContent = 'No requests in this month.';
      tr.append(td);
      body.replaceChildren(tr);
      return;
    }
    body.replaceChildren(
      ...items.map((item) => {
        const tr = document.createElement('tr');
        Object.assign(tr.dataset, data(item));
        if (rowClass && rowClass(item)) tr.className = rowClass(item);
        for (const cell of cells(item)) {
          const td = document.createElement('td');
          td.dataset.col = cell.col;
          td.textContent = cell.text;
          if (cell.num) td.className = 'num';
          if (cell.extra) {
            const span = document.createElement('span');
            span.className = 'key-prefix';
            span.textContent = cell.extra;
            td.append(span);
          }
          tr.append(td);
        }
        return tr;
      }),
    );
  }

  // ---- daily chart: cost as bars, requests as a line, one slot per day of the month -----------

  function chart(container, daily, month, days) {
    const width = 900;
    const height = 220;
    const pad = { left: 56, right: 40, top: 12, bottom: 24 };
    const byDay = new Map(daily.map((d) => [d.day, d]));
    const slots = Array.from({ length: days }, (_, i) => {
      const day = `${month}-${String(i + 1).padStart(2, '0')}`;
      const d = byDay.get(day);
      // Floats only to size the drawing; the exact figures are in the tooltips and the tables.
      return { day, cost: d ? Number(d.cost_usd) : 0, costText: d ? d.cost_usd : '0.000000', requests: d ? d.requests : 0 };
    });
    const maxCost = Math.max(...slots.map((s) => s.cost)) || 1;
    const maxRequests = Math.max(...slots.map((s) => s.requests)) || 1;
    const slotWidth = (width - pad.left - pad.right) / days;
    const plotHeight = height - pad.top - pad.bottom;
    const y = (value, max) => pad.top + plotHeight - (value / max) * plotHeight;

    const svg = el('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': `Daily cost and requests, ${month}` });
    svg.append(el('line', { class: 'axis', x1: pad.left, x2: width - pad.right, y1: y(0, 1), y2: y(0, 1) }));
    svg.append(label(pad.left - 6, y(maxCost, maxCost) + 4, `$${maxCost.toFixed(maxCost < 1 ? 6 : 2)}`, 'end'));
    svg.append(label(pad.left - 6, y(0, 1) + 4, '$0', 'end'));
    svg.append(label(width - pad.right + 6, y(maxRequests, maxRequests) + 4, `${maxRequests} req`, 'start'));
    const points = [];
    slots.forEach((s, i) => {
      const x = pad.left + i * slotWidth;
      const top = y(s.cost, maxCost);
      const bar = el('rect', {
        class: 'bar-cost',
        x: x + slotWidth * 0.15,
        width: slotWidth * 0.7,
        y: top,
        height: Math.max(0, y(0, 1) - top),
        'data-day': s.day,
        'data-requests': s.requests,
        'data-cost': s.costText,
      });
      const title = el('title');
      title.textContent = `${s.day}: ${s.requests} requests, $${s.costText}`;
      bar.append(title);
      svg.append(bar);
      const cx = x + slotWidth / 2;
      points.push(`${cx},${y(s.requests, maxRequests)}`);
      if (s.requests > 0) svg.append(el('circle', { class: 'dot-requests', cx, cy: y(s.requests, maxRequests), r: 3 }));
      if (i % 5 === 0 || i === days - 1) svg.append(label(cx, height - 8, String(i + 1), 'middle'));
    });
    svg.append(el('polyline', { class: 'line-requests', points: points.join(' ') }));
    container.replaceChildren(svg);
  }

  function el(name, attrs = {}) {
    const node = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
    return node;
  }

  function label(x, yPos, text, anchor) {
    const node = el('text', { x, y: yPos, 'text-anchor': anchor });
    node.textContent = text;
    return node;
  }

  // ---- start -----------------------------------------------------------------------------------

  if (token) void enter();
  else showSignIn('');
})();
