import { InterceptorsConsumer } from '@nestjs/core/interceptors/interceptors-consumer';
import { AsyncResource } from 'node:async_hooks';
import { lastValueFrom, Observable } from 'rxjs';

/**
 * MeteringInterceptor runs on every keyed request, so Nest's interceptor machinery is on the hot path.
 * patches/@nestjs+core+*.patch backports @nestjs/core 12's bindAsyncScope: Node 20's AsyncResource.bind
 * wraps two deprecation accessors per call (docs/performance.md measured it). `npm ci` applies it.
 */
describe('Nest interceptor consumer (patched)', () => {
  it('runs an interceptor chain without AsyncResource.bind', async () => {
    const bind = jest.spyOn(AsyncResource, 'bind');
    const consumer = new InterceptorsConsumer();
    const passThrough = { intercept: (_context: unknown, next: { handle(): Observable<unknown> }) => next.handle() };
    class Controller {}
    const result = await consumer.intercept([passThrough as never], [{}, {}], new Controller(), () => undefined, async () => 'answer');
    await expect(lastValueFrom(result as Observable<unknown>)).resolves.toBe('answer');
    expect(bind).not.toHaveBeenCalled();
    bind.mockRestore();
  });
});
