import { acceptedExtension, detectContainer } from './audio-file-format';

const bytes = (...parts: (string | number[])[]) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));

describe(detectContainer.name, () => {
  it.each([
    ['flac', bytes('fLaC', [0, 0, 0, 34])],
    ['wav', bytes('RIFF', [0x24, 0, 0, 0], 'WAVE')],
    ['ogg', bytes('OggS', [0, 2, 0, 0])],
    ['mpeg-audio', bytes('ID3', [4, 0, 0])],
    ['mpeg-audio', bytes([0xff, 0xfb, 0x90, 0x64])], // MPEG-1 layer III, 128 kbit/s, 44.1 kHz
    ['mpeg-audio', bytes([0xff, 0xf3, 0x48, 0xc4])], // MPEG-2 layer III
    ['mpeg-program', bytes([0x00, 0x00, 0x01, 0xba, 0x44])],
    ['mp4', bytes([0, 0, 0, 0x1c], 'ftypM4A ')],
    ['mp4', bytes([0, 0, 0, 0x20], 'ftypisom')],
    ['webm', bytes([0x1a, 0x45, 0xdf, 0xa3, 0x9f])],
  ])('recognises %s', (container, head) => {
    expect(detectContainer(head)).toBe(container);
  });

  it.each([
    ['text', bytes('hello, this is not audio')],
    ['a PNG', bytes([0x89], 'PNG\r\n', [0x1a, 0x0a])],
    ['RIFF that is not WAVE (AVI)', bytes('RIFF', [0, 0, 0, 0], 'AVI ')],
    ['raw AAC (ADTS), not an accepted format', bytes([0xff, 0xf1, 0x50, 0x80])],
    ['a frame sync with a reserved bitrate', bytes([0xff, 0xfb, 0xf0, 0x00])],
    ['a frame sync with a reserved sample rate', bytes([0xff, 0xfb, 0x9c, 0x00])],
    ['an empty file', Buffer.alloc(0)],
    ['two bytes', bytes([0xff, 0xfb])],
  ])('refuses %s', (_, head) => {
    expect(detectContainer(head)).toBeNull();
  });
});

describe(acceptedExtension.name, () => {
  it.each([
    ['a.flac', 'flac'],
    ['voice memo.M4A', 'm4a'],
    ['x.mp3', 'mp3'],
    ['x.mp4', 'mp4'],
    ['x.mpeg', 'mpeg'],
    ['x.mpga', 'mpga'],
    ['x.oga', 'oga'],
    ['x.ogg', 'ogg'],
    ['archive.tar.wav', 'wav'],
    ['x.webm', 'webm'],
  ])('accepts %s', (name, extension) => {
    expect(acceptedExtension(name)).toBe(extension);
  });

  it.each(['notes.txt', 'wav', 'x.wav.txt', 'x.aac', 'x.', ''])('refuses "%s"', (name) => {
    expect(acceptedExtension(name)).toBeNull();
  });
});
