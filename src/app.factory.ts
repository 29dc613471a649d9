import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from './app.module';
import { answerClientErrors } from './common/http/client-error-answer';
import { ErrorAnswerListener } from './common/http/error-answer-listener';
import { leaveBodiesUnread } from './common/http/unread-bodies';
import { newRequestId } from './common/http/request-id';
import { answerFrameworkError, registerRequestHooks } from './common/http/request-hooks';
import { applyServerTimeouts } from './common/http/server-timeouts';
import { ROOT_LOGGER } from './common/logging/root-logger';
import { PinoNestLogger } from './common/logging/pino-nest.logger';
import { GatewayOptions } from './config/config.module';
import { setupOpenApi } from './openapi/openapi.setup';

/** Builds the gateway exactly as it runs in production; tests use the same function. */
export async function createGatewayApp(options: GatewayOptions): Promise<INestApplication> {
  const adapter = new FastifyAdapter({
    // Every request's id is the gateway's own (request.id), never one a client sent.
    genReqId: () => newRequestId(),
    // request.ip: the socket's address, or the entry the trusted proxies added to X-Forwarded-For (TRUST_PROXY_HOPS).
    trustProxy: trustedHops(options.env.trustProxyHops),
    frameworkErrors: answerFrameworkError,
    routerOptions: { ignoreTrailingSlash: true, caseSensitive: false, maxParamLength: 1024 },
    // A request on a kept-alive connection while the gateway stops is served, as the in-flight ones are.
    return503OnClosing: false,
    // No Nest middleware: what every request gets is one Fastify hook (registerRequestHooks).
    skipMiddie: true,
    // Uploads are read by TranscriptionUploadInterceptor once the guards have passed.
    multipart: true,
  });
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.register(options), adapter, {
    // Bodies are read after the route's checks by JsonBodyGuard and the upload interceptor, never before.
    bodyParser: false,
    bufferLogs: true,
    // A module that fails to initialise rejects here (Nest would exit the process): main.ts explains it and stops the embedded database.
    abortOnError: false,
  });
  app.useLogger(app.get(PinoNestLogger));
  const fastify = app.getHttpAdapter().getInstance();
  leaveBodiesUnread(fastify);
  const logger = app.get(ROOT_LOGGER);
  registerRequestHooks(fastify, logger);
  const server = app.getHttpServer();
  applyServerTimeouts(server, options.config.limits);
  answerClientErrors(server, options.config.limits, logger, app.get(ErrorAnswerListener));
  setupOpenApi(app);
  return app;
}

/** The nearest `hops` proxies are trusted to add the client's address to X-Forwarded-For (proxy-addr's rule for a number). */
function trustedHops(hops: number): false | ((address: string, hop: number) => boolean) {
  return hops > 0 ? (_address, hop) => hop < hops : false;
}
