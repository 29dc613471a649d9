import type { FastifyReply, FastifyRequest } from 'fastify';
import { errorBodyFor, GatewayError } from '../../errors';

/**
 * The error object as a JSON reply with its code's status: the one rendering of every refusal, whether the
 * exception filter answers it or Fastify's router does before any Nest context exists (answerFrameworkError).
 */
export function sendGatewayError(request: FastifyRequest, reply: FastifyReply, error: GatewayError): void {
  reply.code(error.status).type('application/json; charset=utf-8').send(JSON.stringify(errorBodyFor(request.url, request.headers, error)));
}
