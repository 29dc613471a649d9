// The Webhooks panel (issue 47): the latest deliveries of alerts, from GET /admin/v1/webhooks/deliveries, with
// what is still retried and what was given up.
import { $, fillTable, integer } from './dom.js';

/** `deliveries`: the answer of GET /admin/v1/webhooks/deliveries. */
export function renderWebhooks({ data }) {
  fillTable(
    $('webhooks'),
    data,
    (d) => [
      { text: d.created_at.slice(0, 19).replace('T', ' '), col: 'created_at' },
      { text: d.type, col: 'type', title: JSON.stringify(d.data) },
      { text: d.url, col: 'url' },
      { text: d.status, col: 'status', title: d.next_attempt_at ? `next attempt ${d.next_attempt_at}` : '' },
      { text: integer.format(d.attempts), col: 'attempts', num: true },
      { text: d.last_error ?? '', col: 'last_error' },
    ],
    (d) => ({ id: d.id, type: d.type, status: d.status }),
    (d) => (d.status === 'failed' ? 'webhook-failed' : ''),
  );
}
