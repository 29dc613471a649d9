import { access, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CatalogEntry } from '../../config/gateway-config.schema';
import { UpstreamFailure } from '../upstream-failure';
import { TranscriptionInput, VerboseTranscription } from '../upstream-provider';
import { runEngine } from './child-process';

const MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';
/** 16 kHz mono signed 16-bit PCM: 32,000 bytes per second after the 44-byte WAV header. */
const WAV_HEADER_BYTES = 44;
const WAV_BYTES_PER_SECOND = 32_000;
const WORD_LINE = /^(\S+) (\d+(?:\.\d+)?) (\d+(?:\.\d+)?) (\d+(?:\.\d+)?)$/;

interface Segment {
  id: number;
  start: number;
  end: number;
  text: string;
}

/** Any accepted audio → 16 kHz mono WAV (ffmpeg) → pocketsphinx (en-us) → the verbose_json shape. */
export async function transcribeLocally(
  _model: CatalogEntry,
  input: TranscriptionInput,
  signal: AbortSignal,
  timeoutMs: number,
): Promise<VerboseTranscription> {
  await assertModelInstalled();
  const dir = await mkdtemp(join(tmpdir(), 'gateway-stt-'));
  try {
    // A file, not a pipe: m4a/mp4 keep their index at the end, which ffmpeg must seek to.
    const source = join(dir, 'input');
    const wav = join(dir, 'audio.wav');
    await writeFile(source, input.file);
    const deadline = Date.now() + timeoutMs;
    await decodeToWav(source, wav, signal, timeoutMs);
    const duration = Math.max(0, (await stat(wav)).size - WAV_HEADER_BYTES) / WAV_BYTES_PER_SECOND;
    const output = await runEngine(
      'pocketsphinx_continuous',
      ['-infile', wav, '-hmm', join(MODEL_DIR, 'en-us'), '-lm', join(MODEL_DIR, 'en-us.lm.bin'), '-dict', join(MODEL_DIR, 'cmudict-en-us.dict'), '-time', 'yes', '-logfn', '/dev/null'],
      { signal, timeoutMs: Math.max(1, deadline - Date.now()) },
    );
    const segments = parseUtterances(output);
    return {
      task: 'transcribe',
      language: 'english',
      duration: Math.round(duration * 1000) / 1000,
      text: segments.map((s) => s.text).join(' '),
      segments,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function assertModelInstalled(): Promise<void> {
  try {
    await access(join(MODEL_DIR, 'en-us.lm.bin'));
  } catch {
    throw new UpstreamFailure('engine_missing', `The pocketsphinx English model is not installed (Debian package pocketsphinx-en-us; expected ${MODEL_DIR}).`);
  }
}

/**
 * ffmpeg failing on an upload whose signature looked like audio means the audio itself is broken:
 * that is the caller's 400, as a hosted speech service would answer, not an engine failure.
 */
async function decodeToWav(source: string, wav: string, signal: AbortSignal, timeoutMs: number): Promise<void> {
  try {
    await runEngine('ffmpeg', ['-nostdin', '-loglevel', 'error', '-i', source, '-vn', '-ar', '16000', '-ac', '1', '-c:a', 'pcm_s16le', '-f', 'wav', wav], {
      signal,
      timeoutMs,
    });
  } catch (err) {
    if (err instanceof UpstreamFailure && err.kind === 'server_error' && !signal.aborted) {
      throw new UpstreamFailure('rejected', `The audio file could not be decoded: ${err.message}`, 400);
    }
    throw err;
  }
}

/** pocketsphinx prints each utterance's hypothesis, then one line per word with its start and end. */
function parseUtterances(output: string): Segment[] {
  const segments: Segment[] = [];
  let current: Segment | null = null;
  for (const line of output.split('\n').map((l) => l.trim())) {
    if (line === '') continue;
    const word = WORD_LINE.exec(line);
    if (!word) {
      current = { id: segments.length, start: 0, end: 0, text: line };
      segments.push(current);
    } else if (current) {
      const [, token, start, end] = word;
      if (token === '<s>') current.start = Number(start);
      current.end = Math.max(current.end, Number(end));
    }
  }
  return segments;
}
