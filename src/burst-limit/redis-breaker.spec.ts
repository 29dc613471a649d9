import { Logger } from '@nestjs/common';
import { FAILURES_TO_OPEN, OUTAGE_LOG_INTERVAL_MS, PROBE_INTERVAL_MS, RedisBreaker } from './redis-breaker';

/** Probes the test answers when it chooses. */
class Probes {
  sent = 0;
  private pending: { resolve: () => void; reject: (err: Error) => void }[] = [];

  readonly run = (): Promise<void> => {
    this.sent++;
    return new Promise((resolve, reject) => this.pending.push({ resolve, reject }));
  };

  async answer(): Promise<void> {
    this.pending.shift()!.resolve();
    await settle();
  }

  async fail(): Promise<void> {
    this.pending.shift()!.reject(new Error('Redis did not answer within 1000 ms'));
    await settle();
  }
}

const settle = () => new Promise<void>((r) => jest.requireActual<typeof import('timers')>('timers').setImmediate(r));
const timeout = new Error('Redis did not answer within 1000 ms');

describe(RedisBreaker.name, () => {
  let sut: RedisBreaker;
  let probes: Probes;
  let errors: string[];
  let infos: string[];

  beforeEach(() => {
    jest.useFakeTimers({ now: 1_000_000 });
    errors = [];
    infos = [];
    Logger.overrideLogger({ log: (m: string) => infos.push(m), warn: () => undefined, error: (m: string) => errors.push(m) });
    probes = new Probes();
    sut = new RedisBreaker(probes.run);
  });
  afterEach(() => {
    sut.stop();
    jest.useRealTimers();
    Logger.overrideLogger(false);
  });

  const failTimes = (n: number) => {
    for (let i = 0; i < n; i++) sut.failed(timeout);
  };

  it('stays closed, and logs nothing, below the failures in a row that open it; a success resets the count', () => {
    failTimes(FAILURES_TO_OPEN - 1);
    sut.succeeded();
    failTimes(FAILURES_TO_OPEN - 1);
    expect(sut.state).toBe('closed');
    expect(errors).toEqual([]);
    jest.advanceTimersByTime(10 * PROBE_INTERVAL_MS);
    expect(probes.sent).toBe(0);
  });

  it(`opens after ${FAILURES_TO_OPEN} failures in a row, with one error line naming the cause and the requests let through`, () => {
    sut.letThrough();
    sut.letThrough();
    failTimes(FAILURES_TO_OPEN);
    expect(sut.state).toBe('open');
    expect(errors).toEqual([
      'Redis for burst-limit counters unavailable, chat requests are let through unlimited (2 since the last line): Redis did not answer within 1000 ms',
    ]);
  });

  it('opens at once when the connection is known to be down', () => {
    sut.open(new Error('connect ECONNREFUSED 127.0.0.1:6379'));
    expect(sut.isOpen).toBe(true);
    expect(errors).toHaveLength(1);
  });

  it('probes every interval while open, one probe at a time (half-open while it runs)', async () => {
    failTimes(FAILURES_TO_OPEN);
    expect(probes.sent).toBe(0);
    jest.advanceTimersByTime(PROBE_INTERVAL_MS);
    expect(probes.sent).toBe(1);
    expect(sut.state).toBe('half-open');
    // The probe hangs: no second one meanwhile, whatever the timer or a reconnect asks.
    jest.advanceTimersByTime(5 * PROBE_INTERVAL_MS);
    sut.probe();
    expect(probes.sent).toBe(1);
    await probes.fail();
    expect(sut.state).toBe('open');
    jest.advanceTimersByTime(PROBE_INTERVAL_MS);
    expect(probes.sent).toBe(2);
  });

  it('closes when a probe succeeds, logs that once, and then probes no more', async () => {
    failTimes(FAILURES_TO_OPEN);
    sut.probe();
    await probes.answer();
    expect(sut.state).toBe('closed');
    expect(infos).toEqual(['Redis for burst-limit counters is back; the burst limit applies again']);
    jest.advanceTimersByTime(10 * PROBE_INTERVAL_MS);
    expect(probes.sent).toBe(1);
    // Closed, it needs failures in a row again to open.
    failTimes(FAILURES_TO_OPEN - 1);
    expect(sut.state).toBe('closed');
  });

  it('does not close on a command that answers while open: only a probe closes it', () => {
    failTimes(FAILURES_TO_OPEN);
    sut.succeeded();
    expect(sut.state).toBe('open');
  });

  it('does not probe while closed (a reconnect of a healthy connection)', () => {
    sut.probe();
    expect(probes.sent).toBe(0);
  });

  it('logs an outage at most once per interval, with the requests let through meanwhile', async () => {
    failTimes(FAILURES_TO_OPEN);
    for (let i = 0; i < 7; i++) sut.letThrough();
    // Failed probes and connection errors during the outage.
    for (let t = PROBE_INTERVAL_MS; t < OUTAGE_LOG_INTERVAL_MS; t += PROBE_INTERVAL_MS) {
      jest.advanceTimersByTime(PROBE_INTERVAL_MS);
      await probes.fail();
      sut.open(new Error('connect ECONNREFUSED 127.0.0.1:6379'));
    }
    expect(errors).toHaveLength(1);
    jest.advanceTimersByTime(PROBE_INTERVAL_MS);
    await probes.fail();
    expect(errors).toHaveLength(2);
    expect(errors[1]).toMatch(/\(7 since the last line\): Redis did not answer within 1000 ms$/);
  });

  it('keeps the interval across a short recovery: a flapping Redis is not logged more often', async () => {
    failTimes(FAILURES_TO_OPEN);
    sut.probe();
    await probes.answer();
    failTimes(FAILURES_TO_OPEN);
    expect(sut.isOpen).toBe(true);
    expect(errors).toHaveLength(1);
  });

  it('neither probes nor logs once stopped', () => {
    sut.stop();
    sut.open(new Error('Connection is closed.'));
    jest.advanceTimersByTime(10 * PROBE_INTERVAL_MS);
    expect(probes.sent).toBe(0);
    expect(errors).toEqual([]);
  });
});
