/** The upload formats of SPEC.md's transcription request, by file name extension. */
export const TRANSCRIPTION_EXTENSIONS = ['flac', 'm4a', 'mp3', 'mp4', 'mpeg', 'mpga', 'oga', 'ogg', 'wav', 'webm'] as const;

/** Containers recognised by their first bytes. */
export type AudioContainer = 'flac' | 'wav' | 'ogg' | 'mpeg-audio' | 'mpeg-program' | 'mp4' | 'webm';

/** Bytes needed to recognise every container. */
export const SIGNATURE_BYTES = 12;

const MP4_BOXES = new Set(['ftyp', 'moov', 'mdat', 'free', 'wide', 'skip']);

/** The container that the file's first bytes announce, or null for anything else. */
export function detectContainer(head: Buffer): AudioContainer | null {
  const ascii = (start: number, end: number) => head.subarray(start, end).toString('latin1');
  if (ascii(0, 4) === 'fLaC') return 'flac';
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WAVE') return 'wav';
  if (ascii(0, 4) === 'OggS') return 'ogg';
  if (ascii(0, 3) === 'ID3' || isMpegAudioFrame(head)) return 'mpeg-audio';
  if (head.length >= 4 && head.readUInt32BE(0) === 0x000001ba) return 'mpeg-program';
  if (head.length >= 8 && MP4_BOXES.has(ascii(4, 8))) return 'mp4';
  if (head.length >= 4 && head.readUInt32BE(0) === 0x1a45dfa3) return 'webm';
  return null;
}

/** The lower-case extension of an accepted format, or null. */
export function acceptedExtension(filename: string): string | null {
  const match = /\.([A-Za-z0-9]+)$/.exec(filename);
  const extension = match?.[1].toLowerCase();
  return extension && (TRANSCRIPTION_EXTENSIONS as readonly string[]).includes(extension) ? extension : null;
}

/** An MPEG-1/2 audio frame header (layers I to III): 11 sync bits, a layer, a valid bitrate and sample rate. */
function isMpegAudioFrame(head: Buffer): boolean {
  if (head.length < 3 || head[0] !== 0xff || (head[1] & 0xe0) !== 0xe0) return false;
  const version = (head[1] >> 3) & 0x03;
  const layer = (head[1] >> 1) & 0x03;
  const bitrate = head[2] >> 4;
  const sampleRate = (head[2] >> 2) & 0x03;
  return version !== 0x01 && layer !== 0x00 && bitrate !== 0x0f && sampleRate !== 0x03;
}
