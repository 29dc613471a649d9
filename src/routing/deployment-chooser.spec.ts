import type { UpstreamProvider } from '../providers/upstream-provider';
import type { CatalogEntry } from '../config/gateway-config.schema';
import { CircuitBreaker } from './circuit-breaker';
import { Deployment } from './deployment';
import { chooseDeployment, withTried } from './deployment-chooser';

function deployment(name: string, weight = 1, priority = 0): Deployment {
  return new Deployment('m', name, {} as CatalogEntry, {} as UpstreamProvider, weight, priority, new CircuitBreaker(1, 1000));
}

/** A fixed sequence of random numbers. */
const draws = (...values: number[]) => () => values.shift()!;

describe(chooseDeployment.name, () => {
  it('follows the weights when the load is equal', () => {
    const sut = [deployment('a', 3), deployment('b', 1)];
    const counts = [0, 0];
    for (let i = 0; i < 4000; i++) counts[chooseDeployment(sut, 0, 0)]++;
    expect(counts[0] / 4000).toBeGreaterThan(0.7);
    expect(counts[0] / 4000).toBeLessThan(0.8);
  });

  it('of the two drawn, takes the one with fewer requests in flight', () => {
    const sut = [deployment('a'), deployment('b')];
    sut[0].inFlight = 5;
    expect(chooseDeployment(sut, 0, 0, draws(0.1, 0.9))).toBe(1);
    expect(chooseDeployment(sut, 0, 0, draws(0.9, 0.1))).toBe(1);
    expect(chooseDeployment(sut, 0, 0, draws(0.1, 0.2))).toBe(0);
  });

  it('uses a lower priority only when every deployment of the best one is out or tried', () => {
    const sut = [deployment('fallback', 1, 1), deployment('a'), deployment('b')];
    expect(chooseDeployment(sut, 0, 0, draws(0.99, 0.99))).toBe(2);
    expect(chooseDeployment(sut, withTried(withTried(0, 1), 2), 0)).toBe(0);
    sut[1].breaker.failed(0);
    expect(chooseDeployment(sut, withTried(0, 2), 1)).toBe(0);
  });

  it('answers -1 when every deployment is out or tried', () => {
    const sut = [deployment('a'), deployment('b')];
    sut[0].breaker.failed(0);
    expect(chooseDeployment(sut, withTried(0, 1), 1)).toBe(-1);
  });
});
