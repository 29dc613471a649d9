import { AdminTokenThrottle, trackerFor } from './admin-token-throttle';

const SETTINGS = { maxFailures: 3, windowMs: 10_000, maxAddresses: 4 };

describe(AdminTokenThrottle.name, () => {
  let clock: number;
  let sut: AdminTokenThrottle;

  beforeEach(() => {
    clock = 1_000_000;
    sut = new AdminTokenThrottle(SETTINGS, () => clock);
  });

  function fail(ip: string, times: number): void {
    for (let i = 0; i < times; i++) sut.recordFailure(ip);
  }

  it('lets an address try maxFailures times, then answers whole seconds until its window ends', () => {
    fail('10.0.0.1', 2);
    expect(sut.retryAfterSeconds('10.0.0.1')).toBeNull();
    fail('10.0.0.1', 1);
    expect(sut.retryAfterSeconds('10.0.0.1')).toBe(10);
    clock += 2_500;
    expect(sut.retryAfterSeconds('10.0.0.1')).toBe(8);
    clock += 7_499;
    expect(sut.retryAfterSeconds('10.0.0.1')).toBe(1);
    clock += 1;
    expect(sut.retryAfterSeconds('10.0.0.1')).toBeNull();
  });

  it('counts each address apart', () => {
    fail('10.0.0.1', 3);
    expect(sut.retryAfterSeconds('10.0.0.2')).toBeNull();
    expect(sut.retryAfterSeconds('10.0.0.1')).not.toBeNull();
  });

  it('starts a new window after the old one ended, with a fresh count', () => {
    fail('10.0.0.1', 2);
    clock += 10_000;
    fail('10.0.0.1', 2);
    expect(sut.retryAfterSeconds('10.0.0.1')).toBeNull();
    fail('10.0.0.1', 1);
    expect(sut.retryAfterSeconds('10.0.0.1')).toBe(10);
  });

  it('remembers at most maxAddresses, forgetting the oldest window first', () => {
    fail('10.0.0.1', 3);
    clock += 1;
    for (let i = 2; i <= 50; i++) sut.recordFailure(`10.0.0.${i}`);
    expect(sut.size).toBe(4);
    // The first address's window was the oldest: it went first.
    expect(sut.retryAfterSeconds('10.0.0.1')).toBeNull();
  });

  it('drops ended windows before live ones', () => {
    fail('10.0.0.1', 1);
    clock += 5_000;
    fail('10.0.0.2', 3);
    fail('10.0.0.3', 1);
    fail('10.0.0.4', 1);
    clock += 5_000;
    // 10.0.0.1's window has ended: one more address fits without evicting the throttled 10.0.0.2.
    fail('10.0.0.5', 1);
    expect(sut.size).toBe(4);
    expect(sut.retryAfterSeconds('10.0.0.2')).toBe(5);
  });
});

describe('trackerFor', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::99', '2001:db8:1:2::/64'],
    ['2001:DB8:0001:0002:ffff::1', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    [undefined, 'unknown'],
  ])('%s → %s', (ip, tracker) => {
    expect(trackerFor(ip)).toBe(tracker);
  });
});
