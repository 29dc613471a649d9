import { microsToUsd, usdToMicros } from './money';

describe('money', () => {
  it.each([
    [0.000001, 1n],
    ['0.000001', 1n],
    [1234567.891234, 1234567891234n],
    ['5', 5000000n],
    [5.1, 5100000n],
  ])('parses %p exactly', (input, micros) => {
    expect(usdToMicros(input)).toBe(micros);
  });

  it.each([-1, '1.0000001', 'abc', Number.NaN, 1e-7, '', '1e3'])('rejects %p', (input) => {
    expect(usdToMicros(input as number | string)).toBeNull();
  });

  it('renders six decimals', () => {
    expect(microsToUsd(1n)).toBe('0.000001');
    expect(microsToUsd('1234567891234')).toBe('1234567.891234');
    expect(microsToUsd(-2500000n)).toBe('-2.500000');
  });
});
