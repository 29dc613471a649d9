import { createHash } from 'node:crypto';
import { bodyFingerprint } from './body-fingerprint';

describe(bodyFingerprint.name, () => {
  const body = { model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20 };
  const reordered = { max_tokens: 20, messages: [{ content: 'hi', role: 'user' }], model: 'm' };

  it('is one hash for the same JSON written with its keys in another order', () => {
    const sut = bodyFingerprint(body);
    expect(sut.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(bodyFingerprint(reordered).hash).toBe(sut.hash);
    expect(sut.matches(bodyFingerprint(reordered).hash)).toBe(true);
  });

  it('does not match another body', () => {
    const sut = bodyFingerprint(body);
    expect(sut.matches(bodyFingerprint({ ...body, max_tokens: 21 }).hash)).toBe(false);
    expect(sut.matches(bodyFingerprint({ ...body, messages: [...body.messages, ...body.messages] }).hash)).toBe(false);
  });

  it('matches a record written before canonical fingerprints (SHA-256 of JSON.stringify of the body as parsed) as it matched then', () => {
    const legacy = createHash('sha256').update(JSON.stringify(body)).digest('hex');
    const sut = bodyFingerprint(body);
    expect(sut.hash).not.toBe(legacy);
    expect(sut.matches(legacy)).toBe(true);
    // Such a record names the key order it was sent in.
    expect(bodyFingerprint(reordered).matches(legacy)).toBe(false);
    expect(bodyFingerprint({ ...body, max_tokens: 21 }).matches(legacy)).toBe(false);
  });
});
