import type { ServerResponse } from 'node:http';
import type { GatewayRequest } from './gateway-request';

/**
 * Told of every request answered with an error, by the exception filter or by the HTTP server while the
 * request was in the application's hands, so that its usage record carries the code (the usage module
 * provides it; common code does not import usage).
 */
export abstract class ErrorAnswerListener {
  abstract answeredWithError(req: GatewayRequest, res: ServerResponse, code: string): void;
}
