import 'reflect-metadata';
import { CallHandler, CanActivate, Controller, ExecutionContext, Injectable, Module, NestInterceptor, Post, Req, Res } from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR, NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AddressInfo } from 'node:net';
import { StringDecoder } from 'node:string_decoder';
import { Pool } from 'undici';

/**
 * The framework's floor: what any gateway built as ours is built costs before its own work. NestJS on
 * Fastify with one global guard (a bearer header present) and one pass-through global interceptor (the
 * shape DESIGN.md section 1 asks for), the upstream through an undici keep-alive pool as the minimal
 * proxy's, and the least a billing gateway does to an answer: the model relabelled, so each streamed
 * chunk is parsed and serialised again. No auth look-up, limits, billing, metering, routing or logs.
 */
const upstream = new Pool(process.argv[2], { connections: 2048, keepAliveTimeout: 30_000 });

@Injectable()
class BearerGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const auth = context.switchToHttp().getRequest<FastifyRequest>().headers.authorization;
    return typeof auth === 'string' && auth.startsWith('Bearer ');
  }
}

@Injectable()
class PassThroughInterceptor implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler) {
    return next.handle();
  }
}

interface Relabelled {
  model: string;
}

@Controller('v1/chat')
class ChatController {
  @Post('completions')
  async complete(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const body = req.body as { model: string; stream?: boolean };
    const answer = await upstream.request({
      method: 'POST',
      path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, model: 'bench-model' }),
    });
    if (!body.stream) {
      const completion = (await answer.body.json()) as Relabelled;
      completion.model = body.model;
      reply.code(200).send(completion);
      return;
    }
    const res = reply.raw;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    const decoder = new StringDecoder('utf8');
    let buffered = '';
    for await (const part of answer.body) {
      buffered += decoder.write(part as Buffer);
      let events = '';
      let end: number;
      while ((end = buffered.indexOf('\n\n')) >= 0) {
        const data = buffered.startsWith('data: ') ? buffered.slice(6, end) : '';
        buffered = buffered.slice(end + 2);
        if (data === '' || data === '[DONE]') continue;
        const chunk = JSON.parse(data) as Relabelled;
        chunk.model = body.model;
        events += `data: ${JSON.stringify(chunk)}\n\n`;
      }
      if (events !== '') res.write(events);
    }
    res.end('data: [DONE]\n\n');
  }
}

@Module({
  controllers: [ChatController],
  providers: [
    { provide: APP_GUARD, useClass: BearerGuard },
    { provide: APP_INTERCEPTOR, useClass: PassThroughInterceptor },
  ],
})
class FloorModule {}

async function main(): Promise<void> {
  const app = await NestFactory.create<NestFastifyApplication>(FloorModule, new FastifyAdapter(), { logger: false });
  await app.listen(0, '127.0.0.1');
  process.stdout.write(`${(app.getHttpServer().address() as AddressInfo).port}\n`);
}

void main();
