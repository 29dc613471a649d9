import { Readable } from 'node:stream';
import type { ChatChunk } from '../chat-contract';
import { SseReader } from '../http/sse-reader';
import { UpstreamFailure } from '../upstream-failure';
import { chatChunks } from './chat-chunks';

/** A body that arrives in exactly these chunks. */
function body(chunks: string[]): Readable {
  return Readable.from(chunks.map((c) => Buffer.from(c, 'utf8')));
}

async function parse(chunks: string[]): Promise<ChatChunk[]> {
  const events: ChatChunk[] = [];
  for await (const event of chatChunks('test', new SseReader('test', body(chunks)))) events.push(event);
  return events;
}

async function failure(chunks: string[]): Promise<UpstreamFailure> {
  const err = await parse(chunks).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UpstreamFailure);
  return err as UpstreamFailure;
}

const EVENTS = ['Hello', ' world'].map((content, i) => ({ id: 'chatcmpl-1', choices: [{ index: 0, delta: { content }, finish_reason: null }], n: i }));

describe(chatChunks.name, () => {
  it('yields each data payload as a chunk, whatever its event name', async () => {
    const [a, b] = EVENTS.map((e) => JSON.stringify(e));
    await expect(parse([`event: message\ndata: ${a}\n\ndata: ${b}\n\ndata: [DONE]\n\n`])).resolves.toEqual(EVENTS);
  });

  it('keeps each chunk\'s own service_tier, which billing reads as the tier that served it', async () => {
    const chunk = { ...EVENTS[0], service_tier: 'priority' };
    const [read] = await parse([`data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`]);
    expect(read.service_tier).toBe('priority');
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
