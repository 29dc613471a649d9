import { SseWriter } from '../chat/sse';

/** OpenAI's transcription stream events (openai SDK: TranscriptionTextDeltaEvent, TranscriptionTextDoneEvent). */
export interface TranscriptTextDelta {
  type: 'transcript.text.delta';
  delta: string;
}

export interface TranscriptTextDone {
  type: 'transcript.text.done';
  text: string;
}

/**
 * A finished transcript as OpenAI streams one (`stream: true`): a delta per word, then the whole text. The
 * done event has no `usage`: OpenAI's is in tokens, which no transcription engine here reports.
 */
export async function streamTranscript(sse: SseWriter, text: string): Promise<void> {
  for (const delta of wordDeltas(text)) {
    const event: TranscriptTextDelta = { type: 'transcript.text.delta', delta };
    await sse.send(event);
  }
  const done: TranscriptTextDone = { type: 'transcript.text.done', text };
  sse.end(JSON.stringify(done));
}

/** Each word with the white space after it (the first with any before it too): joined, the text exactly; one delta at least. */
export function wordDeltas(text: string): string[] {
  return text.match(/^\s*\S+\s*|\S+\s*/g) ?? [text];
}
