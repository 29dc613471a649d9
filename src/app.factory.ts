import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import type { Server } from 'node:http';
import { AppModule } from './app.module';
import { answerClientErrors } from './common/http/client-error-answer';
import { ErrorAnswerListener } from './common/http/error-answer-listener';
import { applyServerTimeouts } from './common/http/server-timeouts';
import { ROOT_LOGGER } from './common/logging/root-logger';
import { PinoNestLogger } from './common/logging/pino-nest.logger';
import { GatewayOptions } from './config/config.module';
import { setupOpenApi } from './openapi/openapi.setup';

/** Builds the gateway exactly as it runs in production; tests use the same function. */
export async function createGatewayApp(options: GatewayOptions): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.register(options), {
    // Bodies are read after the route's checks by JsonBodyGuard and multer, never before.
    bodyParser: false,
    bufferLogs: true,
    // A module that fails to initialise rejects here (Nest would exit the process): main.ts explains it and stops the embedded database.
    abortOnError: false,
  });
  app.useLogger(app.get(PinoNestLogger));
  app.disable('x-powered-by');
  app.set('etag', false);
  const server = app.getHttpServer() as Server;
  applyServerTimeouts(server, options.config.limits);
  answerClientErrors(server, options.config.limits, app.get(ROOT_LOGGER), app.get(ErrorAnswerListener));
  // req.ip: the socket's address, or the entry the trusted proxies added to X-Forwarded-For (TRUST_PROXY_HOPS).
  app.set('trust proxy', options.env.trustProxyHops);
  setupOpenApi(app);
  return app;
}
