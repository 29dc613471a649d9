import { Readable } from 'node:stream';
import { UpstreamFailure } from '../upstream-failure';
import { parseSse } from './sse-parser';

/** A body that arrives in exactly these chunks (strings are UTF-8 encoded, Buffers sent as they are). */
function body(chunks: (string | Buffer)[]): Readable {
  return Readable.from(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c, 'utf8') : c)));
}

async function parse(chunks: (string | Buffer)[]): Promise<Record<string, unknown>[]> {
  const events: Record<string, unknown>[] = [];
  for await (const event of parseSse('test', body(chunks))) events.push(event);
  return events;
}

async function failure(chunks: (string | Buffer)[]): Promise<UpstreamFailure> {
  const err = await parse(chunks).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UpstreamFailure);
  return err as UpstreamFailure;
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

const REPLY = ['Grüße', ' aus', ' 東京', ' 🌸', ' — ça va?'];
const EVENTS = REPLY.map((content, i) => ({ id: 'chatcmpl-1', choices: [{ index: 0, delta: { content }, finish_reason: null }], n: i }));
const sse = (lineEnd: string) => EVENTS.map((e) => `data: ${JSON.stringify(e)}${lineEnd}${lineEnd}`).join('') + `data: [DONE]${lineEnd}${lineEnd}`;

describe(parseSse.name, () => {
  it('yields each event once, in order, whatever the chunk boundaries: every single-byte split, including inside multi-byte UTF-8 characters', async () => {
    const bytes = Buffer.from(sse('\n'), 'utf8');
    // The fixture really has characters of 2, 3 and 4 bytes for the splits to fall into.
    expect(bytes.length - sse('\n').length).toBeGreaterThanOrEqual(1 + 2 * 2 + 3 + 2);
    for (let cut = 1; cut < bytes.length; cut++) {
      await expect(parse(cutAt(bytes, [cut]))).resolves.toEqual(EVENTS);
    }
  });

  it('reassembles a stream sent one byte per chunk, and one event split across many chunks', async () => {
    const bytes = Buffer.from(sse('\n'), 'utf8');
    const oneByte = Array.from({ length: bytes.length }, (_, i) => i + 1).slice(0, -1);
    await expect(parse(cutAt(bytes, oneByte))).resolves.toEqual(EVENTS);
    const first = Buffer.from(`data: ${JSON.stringify(EVENTS[0])}\n\n`);
    const many = cutAt(Buffer.concat([first, Buffer.from('data: [DONE]\n\n')]), [3, 9, 10, 17, 18, 19, 25, first.length - 1]);
    await expect(parse(many)).resolves.toEqual([EVENTS[0]]);
  });

  it('yields several events that arrive in one chunk, and the whole stream in one chunk', async () => {
    await expect(parse([sse('\n')])).resolves.toEqual(EVENTS);
  });

  it('reads CRLF line endings, and a CR and its LF in different chunks', async () => {
    const text = sse('\r\n');
    await expect(parse([text])).resolves.toEqual(EVENTS);
    const bytes = Buffer.from(text, 'utf8');
    const crs = [...bytes.entries()].filter(([, b]) => b === 0x0d).map(([i]) => i + 1);
    await expect(parse(cutAt(bytes, crs))).resolves.toEqual(EVENTS);
  });

  it('reads lone CR line endings (the WHATWG rules allow CR, LF and CRLF), split anywhere, with [DONE] ending on the last byte', async () => {
    const bytes = Buffer.from(sse('\r'), 'utf8');
    await expect(parse([bytes])).resolves.toEqual(EVENTS);
    for (let cut = 1; cut < bytes.length; cut++) {
      await expect(parse(cutAt(bytes, [cut]))).resolves.toEqual(EVENTS);
    }
  });

  it('reads a stream that mixes LF, CRLF and CR', async () => {
    const [a, b, c] = EVENTS.map((e) => JSON.stringify(e));
    await expect(parse([`data: ${a}\r\n\ndata: ${b}\r\rdata: ${c}\n\r\ndata: [DONE]\r\n\r\n`])).resolves.toEqual(EVENTS.slice(0, 3));
  });

  it('skips comment lines, keep-alive comments and blank lines outside events, and ignores event:, id: and retry: fields', async () => {
    const [a, b] = EVENTS.map((e) => JSON.stringify(e));
    const text = `: OPENROUTER PROCESSING\n\n: keep-alive\n\n\n\nevent: message\nid: 1\nretry: 1000\ndata: ${a}\n: a comment inside an event\n\n\r\n: keep-alive\r\n\r\ndata: ${b}\n\ndata: [DONE]\n\n`;
    await expect(parse([text])).resolves.toEqual(EVENTS.slice(0, 2));
    await expect(parse(cutAt(Buffer.from(text), [1, 14, 15, 30, 60, 61, 62]))).resolves.toEqual(EVENTS.slice(0, 2));
  });

  it('joins the data: lines of one event with LF, with or without the space after the colon', async () => {
    await expect(parse(['data: {"a":\ndata:1,\ndata: "b": "x"}\n\ndata:[DONE]\n\n'])).resolves.toEqual([{ a: 1, b: 'x' }]);
  });

  it('stops at [DONE] and reads nothing after it', async () => {
    await expect(parse([`data: ${JSON.stringify(EVENTS[0])}\n\ndata: [DONE]\n\ndata: not json at all\n\n`])).resolves.toEqual([EVENTS[0]]);
  });

  it('fails a stream that ends without [DONE], including one whose [DONE] line is not ended by a blank line', async () => {
    expect((await failure([`data: ${JSON.stringify(EVENTS[0])}\n\n`])).message).toMatch(/without \[DONE\]/);
    expect((await failure([`data: ${JSON.stringify(EVENTS[0])}\n\ndata: [DONE]\n`])).message).toMatch(/without \[DONE\]/);
    expect((await failure([`data: ${JSON.stringify(EVENTS[0])}\r\rdata: [DONE]\r`])).message).toMatch(/without \[DONE\]/);
  });

  it('fails on a payload that is not JSON, one that is not an object, and an in-band error event', async () => {
    expect(await failure(['data: {"id": broken\n\n'])).toMatchObject({ kind: 'bad_response' });
    expect(await failure(['data: [1, 2]\n\n'])).toMatchObject({ kind: 'bad_response' });
    const error = await failure(['data: {"error": {"message": "overloaded"}}\n\n']);
    expect(error).toMatchObject({ kind: 'server_error' });
    expect(error.message).toContain('overloaded');
  });
});
