import { postJson } from './chat-support';
import { expectValidAgainst } from './openapi';
import { TestApp } from './test-app';

/** POSTs a raw body to /v1/responses (for what the SDK would refuse to send, and to read the SSE as sent). */
export function postResponses(gw: TestApp, key: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  return postJson(gw, key, '/v1/responses', body, init);
}

export interface NamedEvent {
  event: string | null;
  data: any;
}

/** The events of an SSE body: the `event:` line's name and the parsed `data:` payload of each. */
export function parseNamedEvents(text: string): NamedEvent[] {
  return text
    .split(/\r?\n\r?\n/)
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const lines = block.split(/\r?\n/);
      const name = lines.find((line) => line.startsWith('event: '))?.slice(7) ?? null;
      const data = lines.filter((line) => line.startsWith('data: ')).map((line) => line.slice(6)).join('\n');
      return { event: name, data: JSON.parse(data) };
    });
}

/**
 * Asserts what every Responses stream must hold: each event validates against ResponseStreamEvent, is
 * named on its `event:` line by its type, and the sequence numbers count up from 0.
 */
export function expectValidStream(events: NamedEvent[]): void {
  events.forEach(({ event, data }, i) => {
    expectValidAgainst('ResponseStreamEvent', data);
    expect(event).toBe(data.type);
    expect(data.sequence_number).toBe(i);
  });
}
