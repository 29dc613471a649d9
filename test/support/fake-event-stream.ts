import type { ServerResponse } from 'node:http';
import { pause, write } from './fake-server';
import type { FailureMode } from './fake-openai-wire';
import type { SseWriter } from './sse-framing';

/** What a fake OpenAI stream needs of its answer: the socket, the scripted failure, and its ways to break off. */
export interface StreamAnswerContext {
  res: ServerResponse;
  mode: FailureMode | null;
  /** Between events (`chunkDelayMs`, or `slowChunkDelayMs` for `slowChunks`). */
  delay: number;
  faultAfterEvents: number | null;
  sse: SseWriter;
  destroy(): void;
  /** The mid-answer fault of the mode: a reset (`resetMidStream`), a clean cut (`truncatedChunked`), else a destroy. */
  breakConnection(): void;
  /** Bytes with no newline until the client goes away (`endlessLine`). */
  writeEndless(): Promise<void>;
}

/** A dialect's broken frames for the failure modes, and how its stream ends. */
export interface FaultFrames {
  contentType: string;
  /** The start of an event whose line never ends (`endlessLine`). */
  endless: string;
  /** An event whose data is not JSON (`invalidJsonData`). */
  invalidJson: string;
  /** The second event, cut in its JSON (`malformedJson`). */
  malformed: string;
  /** The last write after the events (chat's `[DONE]`), if the dialect has one. */
  end?: string;
}

/** Good events sent before a malformed stream's fault when `faultAfterEvents` is null. */
const DEFAULT_FAULT_AFTER: Partial<Record<FailureMode, number>> = { invalidJsonData: 0, truncatedChunked: 2, resetMidStream: 2, endlessLine: 0 };

/**
 * Framed events with the framing of `ctx.sse` and the failure mode of `ctx.mode`, as both OpenAI dialects break
 * (chat completions' chunks, the Responses API's events): a fault after N events, half then a cut, a broken
 * event, pauses between events.
 */
export async function writeEventStream(frames: string[], ctx: StreamAnswerContext, faults: FaultFrames): Promise<void> {
  const { res, mode, sse } = ctx;
  res.writeHead(200, { 'content-type': faults.contentType, 'cache-control': 'no-cache', connection: 'keep-alive' });
  if (mode === 'notSse') {
    await write(res, 'HTTP/1.1 200 OK?\n<html>this is not an event stream</html>\n\x00\x01garbage\n\n');
    return void res.end('more garbage without a data line\n');
  }
  const faultAt = mode && DEFAULT_FAULT_AFTER[mode] !== undefined ? Math.min(ctx.faultAfterEvents ?? DEFAULT_FAULT_AFTER[mode]!, frames.length) : Infinity;
  const failAfter = mode === 'midStreamFailure' ? Math.max(1, Math.floor(frames.length / 2)) : Infinity;
  for (let i = 0; i <= frames.length; i++) {
    if (res.destroyed) return;
    // The events before a fault or a pause reach the client whole, however they were cut.
    if (i === failAfter || i === faultAt || (i > 0 && ctx.delay)) await sse.flush();
    if (i === failAfter) return ctx.destroy();
    if (i === faultAt) {
      if (mode === 'truncatedChunked' || mode === 'resetMidStream') return ctx.breakConnection();
      if (mode === 'endlessLine') {
        await write(res, faults.endless);
        return ctx.writeEndless();
      }
      if (mode === 'invalidJsonData') await sse.event(faults.invalidJson);
    }
    if (i === frames.length) break;
    if (i > 0 && ctx.delay) await pause(res, ctx.delay);
    if (res.destroyed) return;
    await sse.event(mode === 'malformedJson' && i === 1 ? faults.malformed : frames[i]);
  }
  if (faults.end !== undefined) await sse.end(faults.end);
  else if (await sse.flush()) res.end();
}
