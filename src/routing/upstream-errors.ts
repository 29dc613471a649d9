import { ErrorCode, GatewayError } from '../errors';
import { UpstreamFailure } from '../providers/upstream-failure';

/**
 * A failure worth another deployment (docs/configuration.md, "Deployments"): a connection failure, no
 * answer's headers in time, a 429 or a 5xx, a refused credential (another deployment has its own). Any other 4xx
 * is the request's own fault and passes through; a malformed or broken answer after its headers is not retried either.
 */
export function isRetryable(err: unknown): boolean {
  if (!(err instanceof UpstreamFailure)) return false;
  switch (err.kind) {
    case 'unreachable':
    case 'server_error':
    case 'credentials_refused':
      return true;
    case 'rejected':
      return err.status === 429;
    case 'timeout':
    case 'bad_response':
      return err.beforeHeaders;
    default:
      return false;
  }
}

/** Whether a failure counts against the deployment's circuit: an upstream 4xx other than 429 shows it up and answering. */
export function countsAgainstDeployment(err: unknown): boolean {
  return !(err instanceof UpstreamFailure && err.kind === 'rejected' && err.status !== 429);
}

/** Every deployment of the model is out: 503 at once, with when the first one lets a probe through. */
export function allDeploymentsOut(model: string, retryInMs: number): GatewayError {
  const retryAfterS = Math.max(1, Math.ceil(retryInMs / 1000));
  return new GatewayError(
    ErrorCode.UpstreamUnavailable,
    `Every upstream of the model ${model} is unavailable right now; retry after ${retryAfterS} s.`,
    null,
    503,
    retryAfterS,
  );
}

/** The request's time budget ran out across attempts (no single attempt's own timeout). */
export function budgetSpent(model: string, budgetMs: number): UpstreamFailure {
  return new UpstreamFailure('timeout', `No upstream of the model ${model} answered within ${budgetMs} ms.`, null, true);
}
