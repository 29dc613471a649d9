// Daily chart: cost as bars on the left axis, requests as a line on the right axis, one slot per day of
// the period. Both axes share four divisions, so their ticks sit on the same grid lines. Days still to come are
// left empty (not drawn as zero), and the drawing is as wide as the screen gives, so that its labels keep their size
// on a phone.
import { daysOf } from './period.js';

const SVG = 'http://www.w3.org/2000/svg';
const DIVISIONS = 4;
const MICRO_USD = 0.000001;

/**
 * The smallest "nice" step (1, 2, 2.5 or 5 times a power of ten) with `DIVISIONS` steps reaching `max`.
 * Whole steps only for counts; never below a micro-dollar for costs (the smallest amount charged).
 */
function niceStep(max, { whole, smallest }) {
  const raw = Math.max(max / DIVISIONS, smallest);
  const power = 10 ** Math.floor(Math.log10(raw));
  for (const factor of [1, 2, 2.5, 5, 10]) {
    const step = factor * power;
    if (whole && !Number.isInteger(step)) continue;
    if (step * (1 + 1e-9) >= raw) return { step, decimals: Math.max(0, -Math.floor(Math.log10(step) + 1e-9) + (factor === 2.5 ? 1 : 0)) };
  }
  return { step: 10 * power, decimals: 0 };
}

function axis(max, options, format) {
  const { step, decimals } = niceStep(max, options);
  const ticks = Array.from({ length: DIVISIONS + 1 }, (_, i) => {
    const text = (step * i).toFixed(Math.min(decimals, 6));
    return { value: Number(text), text: format(i === 0 ? '0' : text) };
  });
  return { top: step * DIVISIONS, ticks };
}

export function chart(container, daily, sel) {
  // The drawing's units are about the screen's pixels (as wide as the card, which it fills): its text keeps its font
  // size on a phone and on a wide screen alike, never scaled down to ~4 px nor up.
  const width = Math.max(300, Math.min(1360, (document.documentElement.clientWidth || 900) - 80));
  const height = width < 600 ? 200 : 240;
  const pad = { left: 72, right: 56, top: 22, bottom: 24 };
  const byDay = new Map(daily.map((d) => [d.day, d]));
  const today = new Date().toISOString().slice(0, 10);
  const all = daysOf(sel);
  const days = all.length;
  const slots = all.map((day) => {
    const d = byDay.get(day);
    // Floats only to size the drawing; the exact figures are in the tooltips and the tables.
    return { day, future: day > today, cost: d ? Number(d.cost_usd) : 0, costText: d ? d.cost_usd : '0.000000', requests: d ? d.requests : 0 };
  });
  // An empty period still gets a readable scale ($0 to $1, 0 to 4 requests).
  const cost = axis(Math.max(...slots.map((s) => s.cost)) || 1, { whole: false, smallest: MICRO_USD }, (v) => `$${v}`);
  const requests = axis(Math.max(...slots.map((s) => s.requests)), { whole: true, smallest: 1 }, (v) => v);
  const slotWidth = (width - pad.left - pad.right) / days;
  const plotHeight = height - pad.top - pad.bottom;
  const y = (value, top) => pad.top + plotHeight - (value / top) * plotHeight;
  const baseline = y(0, 1);
  // Day labels at least ~36 px apart: every day on a short period, every 5th (or more) on a long one or a phone.
  const every = slotWidth >= 36 ? 1 : Math.ceil(36 / slotWidth / 5) * 5;
  const labelled = (i) => i % every === 0 || (i === days - 1 && i % every >= every / 2);
  const monthLong = sel.month !== null && sel.month !== undefined;

  const svg = el('svg', { viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'aria-label': `Daily cost and requests, ${sel.label}` });
  cost.ticks.forEach((tick, i) => {
    const ty = y(tick.value, cost.top);
    svg.append(el('line', { class: i === 0 ? 'axis' : 'grid', x1: pad.left, x2: width - pad.right, y1: ty, y2: ty }));
    svg.append(label(pad.left - 6, ty + 4, tick.text, 'end', { class: 'tick tick-cost', 'data-axis': 'cost', 'data-value': tick.value }));
    const r = requests.ticks[i];
    svg.append(label(width - pad.right + 6, ty + 4, r.text, 'start', { class: 'tick tick-requests', 'data-axis': 'requests', 'data-value': r.value }));
  });
  svg.append(label(2, pad.top - 10, 'cost (USD)', 'start', { class: 'axis-title' }));
  svg.append(label(width - 2, pad.top - 10, 'requests', 'end', { class: 'axis-title' }));
  const points = [];
  slots.forEach((s, i) => {
    const x = pad.left + i * slotWidth;
    const cx = x + slotWidth / 2;
    if (labelled(i)) svg.append(label(cx, height - 8, monthLong ? String(i + 1) : s.day.slice(5), 'middle'));
    if (s.future) return;
    const top = y(s.cost, cost.top);
    const bar = el('rect', {
      class: 'bar-cost',
      x: x + slotWidth * 0.15,
      width: slotWidth * 0.7,
      y: top,
      height: Math.max(0, baseline - top),
      'data-day': s.day,
      'data-requests': s.requests,
      'data-cost': s.costText,
    });
    const title = el('title');
    title.textContent = `${s.day}: ${s.requests} requests, $${s.costText}`;
    bar.append(title);
    svg.append(bar);
    const cy = y(s.requests, requests.top);
    points.push(`${cx},${cy}`);
    if (s.requests > 0) svg.append(el('circle', { class: 'dot-requests', cx, cy, r: 3, 'data-day': s.day }));
  });
  svg.append(el('polyline', { class: 'line-requests', points: points.join(' ') }));
  container.replaceChildren(svg);
}

function el(name, attrs = {}) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

function label(x, yPos, text, anchor, attrs = {}) {
  const node = el('text', { x, y: yPos, 'text-anchor': anchor, ...attrs });
  node.textContent = text;
  return node;
}
