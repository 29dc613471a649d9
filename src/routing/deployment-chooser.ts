import type { Deployment } from './deployment';

/** Deployments already tried by one request, as bits by index (MAX_DEPLOYMENTS bounds the index). */
export type TriedSet = number;

export const tried = (set: TriedSet, index: number): boolean => (set & (1 << index)) !== 0;
export const withTried = (set: TriedSet, index: number): TriedSet => set | (1 << index);

/**
 * The index of the deployment to try next, or -1 when none is left: among the deployments not yet tried
 * whose circuit lets a request through, those of the best (lowest) priority; two drawn by weight, and the
 * one with fewer requests in flight from this replica (power of two choices; the first drawn on a tie, so
 * that equal load follows the weights exactly). No allocation: this runs for every routed request.
 */
export function chooseDeployment(deployments: readonly Deployment[], triedSet: TriedSet, now: number, random: () => number = Math.random): number {
  let priority = Infinity;
  let totalWeight = 0;
  for (let i = 0; i < deployments.length; i++) {
    const d = deployments[i];
    if (tried(triedSet, i) || d.priority > priority || !d.breaker.isAvailable(now)) continue;
    if (d.priority < priority) {
      priority = d.priority;
      totalWeight = 0;
    }
    totalWeight += d.weight;
  }
  if (priority === Infinity) return -1;
  const first = drawByWeight(deployments, triedSet, now, priority, totalWeight * random());
  const second = drawByWeight(deployments, triedSet, now, priority, totalWeight * random());
  return deployments[second].inFlight < deployments[first].inFlight ? second : first;
}

function drawByWeight(deployments: readonly Deployment[], triedSet: TriedSet, now: number, priority: number, point: number): number {
  let last = -1;
  for (let i = 0; i < deployments.length; i++) {
    const d = deployments[i];
    if (tried(triedSet, i) || d.priority !== priority || !d.breaker.isAvailable(now)) continue;
    last = i;
    point -= d.weight;
    if (point < 0) return i;
  }
  // Rounding left the point at the very end: the last candidate.
  return last;
}
