import { AdminClient } from './support/admin-client';
import { startTestApp, TestApp } from './support/test-app';

const POST_ONLY = ['/v1/chat/completions', '/v1/audio/transcriptions', '/v1/audio/speech'];

async function expectNotFound(res: Response): Promise<void> {
  expect(res.status).toBe(404);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.headers.get('x-request-id')).toMatch(/^req_/);
  expect(await res.json()).toEqual({
    error: { message: expect.any(String), type: 'invalid_request_error', param: null, code: 'not_found' },
  });
}

describe('Routing rules (DESIGN.md section 5 step 1, before authentication)', () => {
  let gw: TestApp;
  let key: string;

  beforeAll(async () => {
    gw = await startTestApp();
    ({ key } = await new AdminClient(gw.url).createAccount());
  });
  afterAll(() => gw.close());

  describe.each(POST_ONLY)('%s', (path) => {
    it.each(['GET', 'PUT', 'PATCH', 'DELETE'])('answers %s with 404 not_found without a key', async (method) => {
      await expectNotFound(await fetch(`${gw.url}${path}`, { method }));
    });

    it.each(['GET', 'DELETE'])('answers %s with 404 not_found even with a valid key', async (method) => {
      await expectNotFound(await fetch(`${gw.url}${path}`, { method, headers: { authorization: `Bearer ${key}` } }));
    });

    it('answers GET with a trailing slash and a query string with 404 not_found too', async () => {
      await expectNotFound(await fetch(`${gw.url}${path}/?x=1`));
    });
  });

  it.each([
    ['GET', '/v1/nothing-here'],
    ['POST', '/v1/images/generations'],
    ['POST', '/v1/embeddings'],
    ['GET', '/v1'],
    ['GET', '/'],
    ['GET', '/v2/models'],
    ['DELETE', '/v1/files/file-abc'],
    ['GET', '/v1/chat/completions/extra'],
  ])('answers %s %s (unserved) with 404 not_found without a key', async (method, path) => {
    await expectNotFound(await fetch(`${gw.url}${path}`, { method }));
  });

  it('answers an unserved path with 404 for a caller with a valid key too', async () => {
    await expectNotFound(await fetch(`${gw.url}/v1/files`, { headers: { authorization: `Bearer ${key}` } }));
  });

  it('answers the wrong method on /v1/models with 405 before auth, and GET without a key with 401', async () => {
    const post = await fetch(`${gw.url}/v1/models`, { method: 'POST', headers: { authorization: 'Bearer nonsense' } });
    expect(post.status).toBe(405);
    expect(((await post.json()) as any).error.code).toBe('method_not_allowed');
    const get = await fetch(`${gw.url}/v1/models`);
    expect(get.status).toBe(401);
  });
});
