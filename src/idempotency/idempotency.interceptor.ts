import { CallHandler, ExecutionContext, Injectable, Logger, NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { ServerResponse } from 'node:http';
import { from, mergeMap, Observable, of } from 'rxjs';
import { GatewayReply, GatewayRequest } from '../common/http/gateway-request';
import { ErrorCode, GatewayError } from '../errors';
import { assertModelAllowed } from '../keys/allowed-model';
import { meterOf } from '../usage/usage-records';
import { AnswerCapture } from './answer-capture';
import { bodyFingerprint } from './body-fingerprint';
import { IdempotencyStore, KeptAnswer } from './idempotency-store';

/** The metadata under which @Idempotent names its route. */
export const IDEMPOTENT_ROUTE = 'gateway:idempotent-route';
/** 1 to 255 visible ASCII characters (DESIGN.md section 11). */
const KEY = /^[\x21-\x7e]{1,255}$/;
export const REPLAYED_HEADER = 'idempotent-replayed';

/**
 * `Idempotency-Key` on the routes marked @Idempotent (docs/idempotency.md): the account's first request with a key
 * runs and its answer is kept (status 200, not ended in an error); a repeat of the same route and body gets that
 * answer again, byte for byte, without running (no upstream call, no charge; recorded in usage at cost 0); a repeat
 * while the first runs gets 409, the key with another route or body 400. The body is compared by its canonical JSON
 * (body-fingerprint.ts). Route guards ran before: the presenting key is live and, for speech, entitled.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  private readonly logger = new Logger(IdempotencyInterceptor.name);

  constructor(
    private readonly store: IdempotencyStore,
    private readonly reflector: Reflector,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = context.switchToHttp().getRequest<GatewayRequest>();
    const header = req.headers['idempotency-key'];
    if (header === undefined) return next.handle();
    if (typeof header !== 'string' || !KEY.test(header)) {
      throw new GatewayError(ErrorCode.InvalidRequest, 'Idempotency-Key must be 1 to 255 visible ASCII characters, sent once.', 'Idempotency-Key');
    }
    const route = this.reflector.get<string>(IDEMPOTENT_ROUTE, context.getHandler());
    const accountId = req.auth!.accountId;
    const res = context.switchToHttp().getResponse<GatewayReply>().raw;
    return from(this.store.claim(accountId, header, route, bodyFingerprint(req.body ?? null))).pipe(
      mergeMap((claim) => {
        switch (claim.kind) {
          case 'owner':
            this.run(req, res, accountId, header, claim.token);
            return next.handle();
          case 'replay':
            this.replay(req, res, claim.answer);
            return of(undefined);
          case 'in_progress':
            throw new GatewayError(
              ErrorCode.IdempotencyInProgress,
              `A request with this Idempotency-Key is still running; retry after ${claim.retryAfterS} s to get its answer.`,
              'Idempotency-Key',
              409,
              claim.retryAfterS,
            );
          case 'reused':
            throw new GatewayError(
              ErrorCode.IdempotencyKeyReused,
              'This Idempotency-Key was used for another request (another route or body) in the last 24 hours; use a new key for a new request.',
              'Idempotency-Key',
            );
        }
      }),
    );
  }

  /** The first request: its answer is recorded as it is sent, kept at its end if it succeeded, else the key freed. */
  private run(req: GatewayRequest, res: ServerResponse, accountId: string, key: string, token: string): void {
    const renewal = setInterval(() => {
      this.store.renew(accountId, key, token).catch((err: Error) => this.logger.warn({ err, requestId: req.id }, `Could not renew the Idempotency-Key claim of ${req.id}: ${err.message}`));
    }, this.store.renewEveryMs);
    renewal.unref();
    let kept = false;
    const capture = new AnswerCapture(res, this.store.maxAnswerBytes, async () => {
      const served = meterOf(req)?.served;
      if (res.statusCode !== 200 || served?.errorCode || capture.tooLarge) return;
      const answer: KeptAnswer = { status: res.statusCode, headers: capture.headers(), body: capture.body, model: served?.model ?? null, streamed: served?.streamed ?? false };
      try {
        await this.store.keep(accountId, key, token, answer);
        kept = true;
      } catch (err) {
        this.logger.warn({ err, requestId: req.id }, `Could not keep the answer of ${req.id} for its Idempotency-Key: ${(err as Error).message}`);
      }
    });
    res.once('close', () => {
      clearInterval(renewal);
      if (!kept) {
        this.store.release(accountId, key, token).catch((err: Error) => this.logger.warn({ err, requestId: req.id }, `Could not free the Idempotency-Key of ${req.id}: ${err.message}`));
      }
    });
  }

  /**
   * The kept answer, as it was sent, with `idempotent-replayed: true`; recorded at cost 0. The key presenting it passes
   * the model check its own request would have met first (400 model_not_allowed): the answer may be another key's.
   */
  private replay(req: GatewayRequest, res: ServerResponse, answer: KeptAnswer): void {
    meterOf(req)?.describe({ model: answer.model ?? undefined, streamed: answer.streamed });
    assertModelAllowed(req.auth, answer.model);
    res.statusCode = answer.status;
    for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
    res.setHeader(REPLAYED_HEADER, 'true');
    res.setHeader('content-length', answer.body.length);
    res.end(answer.body);
  }
}
