// Small DOM and number helpers shared by the page's modules. Every figure is shown as the API gives it:
// costs are the API's exact decimal strings, never recomputed with floating point.
export const $ = (id) => document.getElementById(id);
export const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

export function seconds(value) {
  return Number(value).toFixed(3);
}

export function percent(rate) {
  return `${(rate * 100).toFixed(1)}%`;
}

/** "2025-11-23T14:05:09.123Z" → "2025-11-23 14:05:09". */
export function utcTime(iso) {
  return iso.replace('T', ' ').slice(0, 19);
}

export function element(tag, props = {}, children = []) {
  const node = document.createElement(tag);
  const { dataset, ...rest } = props;
  Object.assign(node, rest);
  if (dataset) Object.assign(node.dataset, dataset);
  node.append(...children);
  return node;
}

export function facts(dl, entries) {
  dl.replaceChildren(
    ...entries.map(([term, value]) => element('div', {}, [element('dt', { textContent: term }), element('dd', { textContent: value })])),
  );
}

/**
 * One table row per item. `cells(item)` gives each cell as { text, col, num?, part?, title?, extra? } (part:
 * a part of the cell before it, shown lighter; extra: a node or list of nodes after the text); `data(item)`
 * the row's data-* attributes.
 */
export function tableRow(item, cells, data, rowClass) {
  const tr = element('tr', { dataset: data(item), className: (rowClass && rowClass(item)) || '' });
  for (const cell of cells(item)) {
    const className = [cell.num ? 'num' : '', cell.part ? 'part' : ''].filter(Boolean).join(' ');
    const td = element('td', { textContent: cell.text, className, title: cell.title || '', dataset: { col: cell.col } });
    if (cell.extra) td.append(...[].concat(cell.extra));
    tr.append(td);
  }
  return tr;
}

/** The one row of a table with nothing to show: the table's own `data-empty` text, else the period's. */
export function emptyRow(table) {
  const text = table.dataset.empty || 'No requests in this period.';
  const td = element('td', { colSpan: table.tHead.rows[0].cells.length, className: 'empty', textContent: text });
  return element('tr', {}, [td]);
}

export function fillTable(table, items, cells, data, rowClass) {
  const body = table.tBodies[0];
  if (items.length === 0) {
    body.replaceChildren(emptyRow(table));
    return;
  }
  body.replaceChildren(...items.map((item) => tableRow(item, cells, data, rowClass)));
}
