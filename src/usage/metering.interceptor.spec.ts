import { InterceptorsConsumer } from '@nestjs/core/interceptors/interceptors-consumer';
import { AsyncResource } from 'node:async_hooks';
import { lastValueFrom, Observable } from 'rxjs';

/**
 * MeteringInterceptor runs on every keyed request, so Nest's interceptor machinery is on the hot path.
 * @nestjs/core 12 binds the chain's async scope itself (bindAsyncScope); Nest 11 called AsyncResource.bind,
 * which on Node 20 wraps two deprecation accessors per call (docs/performance.md measured it), and needed
 * a patch. This keeps a dependency change from bringing the dearer path back.
 */
describe('Nest interceptor consumer', () => {
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
