import { CircuitBreaker, WINDOW_MIN_CALLS } from './circuit-breaker';

describe(CircuitBreaker.name, () => {
  const cooldownMs = 30_000;
  let sut: CircuitBreaker;
  beforeEach(() => (sut = new CircuitBreaker(3, cooldownMs)));

  it('stays closed below the threshold of consecutive failures, a success resetting the count', () => {
    sut.failed(0);
    sut.failed(1);
    sut.succeeded(2);
    sut.failed(3);
    sut.failed(4);
    expect(sut.state(5)).toBe('closed');
    expect(sut.isAvailable(5)).toBe(true);
  });

  it('opens at the threshold for the cooldown, then lets exactly one probe through', () => {
    [0, 1, 2].forEach((t) => sut.failed(t));
    expect(sut.state(3)).toBe('open');
    expect(sut.isAvailable(cooldownMs + 1)).toBe(false);
    expect(sut.availableInMs(1002)).toBe(cooldownMs - 1000);
    expect(sut.state(cooldownMs + 2)).toBe('half-open');
    expect(sut.isAvailable(cooldownMs + 2)).toBe(true);
    sut.admit(cooldownMs + 2);
    expect(sut.isAvailable(cooldownMs + 3)).toBe(false);
  });

  it('closes when the probe succeeds', () => {
    [0, 1, 2].forEach((t) => sut.failed(t));
    sut.admit(cooldownMs + 2);
    sut.succeeded(cooldownMs + 10);
    expect(sut.state(cooldownMs + 11)).toBe('closed');
    expect(sut.isAvailable(cooldownMs + 11)).toBe(true);
  });

  it('opens for another cooldown when the probe fails', () => {
    [0, 1, 2].forEach((t) => sut.failed(t));
    sut.admit(cooldownMs + 2);
    sut.failed(cooldownMs + 10);
    expect(sut.state(cooldownMs + 11)).toBe('open');
    expect(sut.availableInMs(cooldownMs + 10)).toBe(cooldownMs);
  });

  it('gives the probe turn to the next request when the probe is abandoned', () => {
    [0, 1, 2].forEach((t) => sut.failed(t));
    sut.admit(cooldownMs + 2);
    sut.abandoned();
    expect(sut.isAvailable(cooldownMs + 3)).toBe(true);
  });

  it('opens on a failure ratio of one half over the window, without consecutive failures', () => {
    sut = new CircuitBreaker(100, cooldownMs);
    for (let i = 0; i < WINDOW_MIN_CALLS; i++) {
      if (i % 2 === 1) sut.failed(i);
      else sut.succeeded(i);
    }
    expect(sut.state(WINDOW_MIN_CALLS)).toBe('open');
  });

  it('is taken out for an upstream Retry-After, however few failures it had', () => {
    sut.openFor(5000, 100);
    expect(sut.state(5099)).toBe('open');
    expect(sut.state(5100)).toBe('half-open');
  });
});
