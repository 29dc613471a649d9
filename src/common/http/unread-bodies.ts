import type { FastifyInstance } from 'fastify';

/**
 * Fastify reads a body before the route's handler (and so before Nest's guards) through its content-type
 * parsers. Its own are removed, and every content type gets one that reads nothing: the body stays in the
 * request's stream until the route's checks have passed and JsonBodyGuard, or the upload interceptor
 * (through @fastify/multipart's parser, which reads nothing either), reads it from `request.raw`.
 */
export function leaveBodiesUnread(fastify: FastifyInstance): void {
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
}
