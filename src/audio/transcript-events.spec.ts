import { wordDeltas } from './transcript-events';

describe(wordDeltas.name, () => {
  it.each([
    ['Hello world.', ['Hello ', 'world.']],
    ['  Umm, hello   World!! ', ['  Umm, ', 'hello   ', 'World!! ']],
    ['one', ['one']],
    ['line one\nline two', ['line ', 'one\n', 'line ', 'two']],
    ['   ', ['   ']],
    ['', ['']],
  ])('cuts %j into words that join back into it', (text, expected) => {
    const sut = wordDeltas(text);
    expect(sut).toEqual(expected);
    expect(sut.join('')).toBe(text);
  });
});
