import { PassThrough, Readable } from 'node:stream';
import { UpstreamFailure } from '../upstream-failure';
import { MAX_SSE_EVENT_BYTES, SseEvent, SseReader } from './sse-reader';

/** A body that arrives in exactly these chunks (strings are UTF-8 encoded, Buffers sent as they are). */
function body(chunks: (string | Buffer)[]): Readable {
  return Readable.from(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c, 'utf8') : c)));
}

async function parse(chunks: (string | Buffer)[]): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  for await (const event of new SseReader('test', body(chunks))) events.push(event);
  return events;
}

/** The bytes cut after each of `cuts` (byte offsets). */
function cutAt(bytes: Buffer, cuts: number[]): Buffer[] {
  const pieces: Buffer[] = [];
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    pieces.push(bytes.subarray(from, cut));
    from = cut;
  }
  return pieces;
}

/** Unnamed events of these payloads, then the [DONE] event (the reader leaves its meaning to the provider). */
const framed = (payloads: object[]): SseEvent[] => [...payloads.map((p) => ({ event: undefined, data: JSON.stringify(p) })), DONE];
const DONE: SseEvent = { event: undefined, data: '[DONE]' };

const REPLY = ['Grüße', ' aus', ' 東京', ' 🌸', ' — ça va?'];
const EVENTS = REPLY.map((content, i) => ({ id: 'chatcmpl-1', choices: [{ index: 0, delta: { content }, finish_reason: null }], n: i }));
const FRAMED = framed(EVENTS);
const sse = (lineEnd: string) => EVENTS.map((e) => `data: ${JSON.stringify(e)}${lineEnd}${lineEnd}`).join('') + `data: [DONE]${lineEnd}${lineEnd}`;

describe(SseReader.name, () => {
  it('yields each event once, in order, whatever the chunk boundaries: every single-byte split, including inside multi-byte UTF-8 characters', async () => {
    const bytes = Buffer.from(sse('\n'), 'utf8');
    // The fixture really has characters of 2, 3 and 4 bytes for the splits to fall into.
    expect(bytes.length - sse('\n').length).toBeGreaterThanOrEqual(1 + 2 * 2 + 3 + 2);
    for (let cut = 1; cut < bytes.length; cut++) {
      await expect(parse(cutAt(bytes, [cut]))).resolves.toEqual(FRAMED);
    }
  });

  it('reassembles a stream sent one byte per chunk, and one event split across many chunks', async () => {
    const bytes = Buffer.from(sse('\n'), 'utf8');
    const oneByte = Array.from({ length: bytes.length }, (_, i) => i + 1).slice(0, -1);
    await expect(parse(cutAt(bytes, oneByte))).resolves.toEqual(FRAMED);
    const first = Buffer.from(`data: ${JSON.stringify(EVENTS[0])}\n\n`);
    const many = cutAt(Buffer.concat([first, Buffer.from('data: [DONE]\n\n')]), [3, 9, 10, 17, 18, 19, 25, first.length - 1]);
    await expect(parse(many)).resolves.toEqual(framed([EVENTS[0]]));
  });

  it('yields several events that arrive in one chunk, and the whole stream in one chunk', async () => {
    await expect(parse([sse('\n')])).resolves.toEqual(FRAMED);
  });

  it('reads CRLF line endings, and a CR and its LF in different chunks', async () => {
    const text = sse('\r\n');
    await expect(parse([text])).resolves.toEqual(FRAMED);
    const bytes = Buffer.from(text, 'utf8');
    const crs = [...bytes.entries()].filter(([, b]) => b === 0x0d).map(([i]) => i + 1);
    await expect(parse(cutAt(bytes, crs))).resolves.toEqual(FRAMED);
  });

  it('reads lone CR line endings (the WHATWG rules allow CR, LF and CRLF), split anywhere, with [DONE] ending on the last byte', async () => {
    const bytes = Buffer.from(sse('\r'), 'utf8');
    await expect(parse([bytes])).resolves.toEqual(FRAMED);
    for (let cut = 1; cut < bytes.length; cut++) {
      await expect(parse(cutAt(bytes, [cut]))).resolves.toEqual(FRAMED);
    }
  });

  it('drops a byte-order mark that opens the stream, even one split across reads, and keeps one inside an event', async () => {
    const bytes = Buffer.from(`\ufeff${sse('\n')}`, 'utf8');
    for (const cut of [1, 2, 3]) await expect(parse(cutAt(bytes, [cut]))).resolves.toEqual(FRAMED);
    await expect(parse(['data: \ufeffx\n\n'])).resolves.toEqual([{ event: undefined, data: '\ufeffx' }]);
  });

  it('reads a stream that mixes LF, CRLF and CR', async () => {
    const [a, b, c] = EVENTS.map((e) => JSON.stringify(e));
    await expect(parse([`data: ${a}\r\n\ndata: ${b}\r\rdata: ${c}\n\r\ndata: [DONE]\r\n\r\n`])).resolves.toEqual(framed(EVENTS.slice(0, 3)));
  });

  it('skips comment lines, keep-alive comments and blank lines outside events, ignores id: and retry: fields, and names an event by its event: line', async () => {
    const [a, b] = EVENTS.map((e) => JSON.stringify(e));
    const text = `: OPENROUTER PROCESSING\n\n: keep-alive\n\n\n\nevent: message\nid: 1\nretry: 1000\ndata: ${a}\n: a comment inside an event\n\n\r\n: keep-alive\r\n\r\ndata: ${b}\n\ndata: [DONE]\n\n`;
    const expected = [{ event: 'message', data: a }, { event: undefined, data: b }, DONE];
    await expect(parse([text])).resolves.toEqual(expected);
    await expect(parse(cutAt(Buffer.from(text), [1, 14, 15, 30, 60, 61, 62]))).resolves.toEqual(expected);
  });

  it("names each event by its own event: line (with or without the space), forgotten after the event and after a blank line without data", async () => {
    const text = 'event: message_start\ndata: {"a":1}\n\nevent:ping\r\ndata: {}\r\n\r\nevent: lost\n\ndata: {"b":2}\n\n';
    await expect(parse([text])).resolves.toEqual([
      { event: 'message_start', data: '{"a":1}' },
      { event: 'ping', data: '{}' },
      { event: undefined, data: '{"b":2}' },
    ]);
  });

  it('joins the data: lines of one event with LF, with or without the space after the colon', async () => {
    await expect(parse(['data: {"a":\ndata:1,\ndata: "b": "x"}\n\ndata:[DONE]\n\n'])).resolves.toEqual([{ event: undefined, data: '{"a":\n1,\n"b": "x"}' }, DONE]);
  });

  it('reads on after [DONE] to the end of the body, and drops an event that the body ends before its blank line', async () => {
    const first = JSON.stringify(EVENTS[0]);
    await expect(parse([`data: ${first}\n\ndata: [DONE]\n\ndata: more\n\ndata: cut`])).resolves.toEqual([
      { event: undefined, data: first },
      DONE,
      { event: undefined, data: 'more' },
    ]);
    await expect(parse([`data: ${first}\n\ndata: [DONE]\n`])).resolves.toEqual([{ event: undefined, data: first }]);
    await expect(parse([`data: ${first}\r\rdata: [DONE]\r`])).resolves.toEqual([{ event: undefined, data: first }]);
  });

  it('fails a line or an event longer than MAX_SSE_EVENT_BYTES', async () => {
    const long = 'x'.repeat(MAX_SSE_EVENT_BYTES + 1);
    await expect(parse([`data: ${long}`])).rejects.toBeInstanceOf(UpstreamFailure);
    const half = 'y'.repeat(MAX_SSE_EVENT_BYTES / 2 + 1);
    await expect(parse([`data: ${half}\ndata: ${half}\n\n`])).rejects.toMatchObject({ kind: 'bad_response' });
  });

  it('yields an event whose blank line ends in a CR at the end of a read at once, without waiting for the next read', async () => {
    const stream = new PassThrough();
    const events = new SseReader('test', stream)[Symbol.asyncIterator]();
    stream.write(Buffer.from('data: {"n":1}\r\r'));
    // The upstream now falls silent: the event must not wait for the LF that may (or may not) follow.
    const first = await Promise.race([events.next(), new Promise((resolve) => setTimeout(() => resolve('held back'), 500))]);
    expect(first).toEqual({ done: false, value: { event: undefined, data: '{"n":1}' } });
    stream.end('\ndata: {"n":2}\r\n\r\n');
    expect(await events.next()).toEqual({ done: false, value: { event: undefined, data: '{"n":2}' } });
    expect((await events.next()).done).toBe(true);
  });
});
