import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { storableText } from '../../common/storable-text';
import { CatalogEntry, SPEECH_CONTENT_TYPES, SpeechFormat } from '../../config/gateway-config.schema';
import { UpstreamFailure } from '../upstream-failure';
import { SpeechAudio, SpeechInput } from '../upstream-provider';
import { startEngine } from './child-process';

/** espeak-ng's own default rate, in words per minute, for speed 1.0. */
const BASE_WORDS_PER_MINUTE = 175;

/** ffmpeg's encoder arguments for each speech format. */
const ENCODER_ARGS: Record<string, string[]> = {
  mp3: ['-c:a', 'libmp3lame', '-b:a', '64k', '-f', 'mp3'],
  opus: ['-c:a', 'libopus', '-b:a', '32k', '-f', 'ogg'],
  aac: ['-c:a', 'aac', '-b:a', '64k', '-f', 'adts'],
  flac: ['-c:a', 'flac', '-f', 'flac'],
  wav: ['-c:a', 'pcm_s16le', '-f', 'wav'],
  pcm: ['-ar', '24000', '-ac', '1', '-c:a', 'pcm_s16le', '-f', 's16le'],
};

/**
 * espeak-ng speaks the text (read from stdin, never a shell argument) as WAV; ffmpeg encodes it to the
 * requested format, and its output is streamed to the client as it is produced.
 */
export async function synthesizeSpeech(model: CatalogEntry, input: SpeechInput, signal: AbortSignal, timeoutMs: number): Promise<SpeechAudio> {
  const encoderArgs = ENCODER_ARGS[input.response_format];
  if (!encoderArgs) throw new UpstreamFailure('rejected', `Unsupported response_format ${input.response_format}.`, 400);
  // The voice is an argument of espeak-ng: only the catalog's own voices (aliases already resolved) reach it.
  if (!model.voices?.includes(input.voice)) throw new UpstreamFailure('rejected', `${model.id} has no voice ${JSON.stringify(storableText(input.voice, 64))}.`, 400);
  const wordsPerMinute = String(Math.round(BASE_WORDS_PER_MINUTE * input.speed));
  const speaker = startEngine('espeak-ng', ['-v', input.voice, '-s', wordsPerMinute, '--stdout'], { signal, timeoutMs, stdin: input.input });
  const encoder = startEngine('ffmpeg', ['-nostdin', '-loglevel', 'error', '-f', 'wav', '-i', 'pipe:0', ...encoderArgs, 'pipe:1'], { signal, timeoutMs });
  speaker.child.stdout!.pipe(encoder.child.stdin!);

  const body = new PassThrough();
  // Its reader sees a failure through its iterator; a body nobody reads any more must not throw it.
  body.on('error', () => undefined);
  const failed = Promise.all([speaker.done, encoder.done]).then(
    () => null,
    (err: UpstreamFailure) => err,
  );
  encoder.child.stdout!.pipe(body, { end: false });
  // The status line waits for the first bytes of audio, so a failure before them is a proper 502.
  const first = await Promise.race([once(encoder.child.stdout!, 'data').then(() => null), failed]);
  if (first) {
    body.destroy();
    throw first;
  }
  failed.then((err) => (err ? body.destroy(err) : body.end()));
  return { contentType: SPEECH_CONTENT_TYPES[input.response_format as SpeechFormat], body };
}
