import { access, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { CatalogEntry } from '../../config/gateway-config.schema';
import { UpstreamFailure } from '../upstream-failure';
import { TranscriptionInput, VerboseTranscription } from '../upstream-provider';
import { runEngine } from './child-process';

const MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';
/** 16 kHz mono signed 16-bit PCM: 32,000 bytes per second after the 44-byte WAV header. */
const WAV_HEADER_BYTES = 44;
const WAV_BYTES_PER_SECOND = 32_000;
const WORD_LINE = /^(\S+) (\d+(?:\.\d+)?) (\d+(?:\.\d+)?) (\d+(?:\.\d+)?)$/;

/** Fillers: sentence start and end, silence, and noise tokens such as [NOISE] or ++BREATH++. */
const FILLER = /^(<.*>|\[.*\]|\+\+.*\+\+)$/;
const MIN_POSTERIOR = 1e-10;

interface Segment {
  id: number;
  seek: number;
  start: number;
  end: number;
  text: string;
  tokens: number[];
  temperature: number;
  avg_logprob: number;
  compression_ratio: number;
  no_speech_prob: number;
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
      throw new UpstreamFailure('rejected', `The audio file could not be decoded: ${err.message.replaceAll(source, 'upload')}`, 400);
    }
    throw err;
  }
}

/**
 * pocketsphinx prints each utterance's hypothesis, then one line per token: word, start, end (seconds)
 * and posterior probability. An utterance with an empty hypothesis prints only its tokens.
 */
function parseUtterances(output: string): Segment[] {
  const segments: Segment[] = [];
  let current: { segment: Segment; logProbs: number[] } | null = null;
  const close = () => {
    if (!current) return;
    const { segment, logProbs } = current;
    segment.avg_logprob = logProbs.length ? round(logProbs.reduce((a, b) => a + b, 0) / logProbs.length) : 0;
    current = null;
  };
  for (const line of output.split('\n').map((l) => l.trim())) {
    if (line === '') continue;
    const word = WORD_LINE.exec(line);
    if (!word) {
      close();
      current = { segment: newSegment(segments.length, line), logProbs: [] };
      segments.push(current.segment);
      continue;
    }
    if (!current) continue;
    const [, token, start, end, posterior] = word;
    const segment: Segment = current.segment;
    if (token === '<s>') {
      segment.start = Number(start);
      segment.seek = Math.round(segment.start * 100);
    }
    segment.end = Math.max(segment.end, Number(end));
    if (!FILLER.test(token)) current.logProbs.push(Math.log(Math.max(Number(posterior), MIN_POSTERIOR)));
    if (token === '</s>') close();
  }
  close();
  return segments;
}

/**
 * The fields of an OpenAI verbose_json segment. pocketsphinx has no tokens, sampling temperature or
 * no-speech estimate: those are [], 0 and 0; avg_logprob is the mean log posterior of the words, and
 * compression_ratio is computed from the text as Whisper does (its length over its zlib length).
 */
function newSegment(id: number, text: string): Segment {
  const bytes = Buffer.from(text, 'utf8');
  return {
    id,
    seek: 0,
    start: 0,
    end: 0,
    text,
    tokens: [],
    temperature: 0,
    avg_logprob: 0,
    compression_ratio: round(bytes.length / deflateSync(bytes).length),
    no_speech_prob: 0,
  };
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}
