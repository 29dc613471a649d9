import { openAiDuration, rateLimitHeaders } from './rate-limit-headers';
import { MemoryWindowStore, WINDOW_MS } from './sliding-window';

describe(openAiDuration.name, () => {
  it("writes durations as OpenAI's headers do", () => {
    expect([0, 20, 999, 1000, 1500, 59_999, 60_000, 360_000, 61_250, 3_600_000].map(openAiDuration)).toEqual([
      '0s', '20ms', '999ms', '1s', '1.5s', '59.999s', '1m0s', '6m0s', '1m1.25s', '1h0m0s',
    ]);
  });
});

describe(rateLimitHeaders.name, () => {
  it('names, per measure, the limit with the least left, the lower limit on a tie, and none of a measure nobody limits', () => {
    const asks = [
      { key: 'k', rpm: 10, tpm: null },
      { key: 'a', rpm: 4, tpm: null },
    ];
    const windows = [
      { requests: 3, tokens: 90, refused: null, retryMs: 0, resetMs: 2000 },
      { requests: 1, tokens: 90, refused: null, retryMs: 0, resetMs: 59_000 },
    ];
    expect(rateLimitHeaders(asks, windows)).toEqual([
      ['x-ratelimit-limit-requests', '4'],
      ['x-ratelimit-remaining-requests', '3'],
      ['x-ratelimit-reset-requests', '59s'],
    ]);
    expect(rateLimitHeaders([{ key: 'k', rpm: 7, tpm: 100 }, { key: 'a', rpm: 3, tpm: 200 }], [
      { requests: 3, tokens: 100, refused: null, retryMs: 0, resetMs: 1 },
      { requests: 3, tokens: 100, refused: null, retryMs: 0, resetMs: 2 },
    ])).toEqual([
      ['x-ratelimit-limit-requests', '3'], ['x-ratelimit-remaining-requests', '0'], ['x-ratelimit-reset-requests', '2ms'],
      ['x-ratelimit-limit-tokens', '100'], ['x-ratelimit-remaining-tokens', '0'], ['x-ratelimit-reset-tokens', '1ms'],
    ]);
  });
});

describe(MemoryWindowStore.name, () => {
  let now = 1_000_000;
  let sut: MemoryWindowStore;
  beforeEach(() => (sut = new MemoryWindowStore(() => now)));
  afterEach(() => sut.close());

  it('admits up to rpm in a window, refusing until the oldest admission leaves it, and counts no refusal', async () => {
    const ask = [{ key: 'k', rpm: 2, tpm: null }];
    expect((await sut.hit(ask, 'a', 1)).admitted).toBe(true);
    now += 10_000;
    expect((await sut.hit(ask, 'b', 1)).windows[0]).toMatchObject({ requests: 2, resetMs: WINDOW_MS - 10_000 });
    now += 1_000;
    expect((await sut.hit(ask, 'c', 1)).windows[0]).toMatchObject({ requests: 2, refused: 'requests', retryMs: WINDOW_MS - 11_000 });
    now += WINDOW_MS - 11_000;
    expect((await sut.hit(ask, 'd', 1)).windows[0]).toMatchObject({ requests: 2, refused: null });
  });

  it('holds tokens, trued up while the admission is in the window; counts a request in every window or none', async () => {
    const asks = [{ key: 'k', rpm: null, tpm: 100 }, { key: 'a', rpm: 1, tpm: null }];
    expect((await sut.hit(asks, 'a', 60)).admitted).toBe(true);
    await sut.trueUp(['k', 'a'], 'a', 20);
    // Refused by the account's rpm: counted in neither window.
    expect(await sut.hit(asks, 'b', 80)).toMatchObject({ admitted: false, windows: [{ tokens: 20, refused: null }, { requests: 1, refused: 'requests' }] });
    expect((await sut.hit([asks[0]], 'c', 81)).windows[0]).toMatchObject({ tokens: 20, refused: 'tokens' });
    expect((await sut.hit([asks[0]], 'd', 101)).windows[0]).toMatchObject({ refused: 'too_large', retryMs: WINDOW_MS });
    expect((await sut.hit([asks[0]], 'e', 80)).windows[0]).toMatchObject({ tokens: 100, refused: null });
  });
});
