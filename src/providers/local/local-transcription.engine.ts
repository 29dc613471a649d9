import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CatalogEntry } from '../../config/gateway-config.schema';
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
  const dir = await mkdtemp(join(tmpdir(), 'gateway-stt-'));
  try {
    const source = join(dir, 'input');
    const wav = join(dir, 'audio.wav');
    await writeFile(source, input.file);
    const deadline = Date.now() + timeoutMs;
    await runEngine('ffmpeg', ['-nostdin', '-loglevel', 'error', '-i', source, '-ar', '16000', '-ac', '1', '-c:a', 'pcm_s16le', '-f', 'wav', wav], {
      signal,
      timeoutMs,
    });
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
