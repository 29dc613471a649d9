import { createHmac } from 'node:crypto';
import { signatureHeader, verifySignature } from './webhook-signature';

describe('webhook signature', () => {
  const body = '{"id":"e1","type":"credits.low","created":1700000000,"data":{}}';

  it('is t=<unix>,v1=<hex HMAC-SHA256 of "t.body">', () => {
    const expected = createHmac('sha256', 'whsec').update(`1700000000.${body}`).digest('hex');
    expect(signatureHeader('whsec', body, 1700000000)).toBe(`t=1700000000,v1=${expected}`);
  });

  it('verifies its own header, and refuses another secret, another body, a changed time or an old one', () => {
    const header = signatureHeader('whsec', body, 1700000000);
    expect(verifySignature('whsec', body, header, 1700000010)).toBe(true);
    expect(verifySignature('other', body, header, 1700000010)).toBe(false);
    expect(verifySignature('whsec', `${body} `, header, 1700000010)).toBe(false);
    expect(verifySignature('whsec', body, header.replace('t=1700000000', 't=1700000001'), 1700000010)).toBe(false);
    expect(verifySignature('whsec', body, header, 1700000000 + 301)).toBe(false);
    expect(verifySignature('whsec', body, 'v1=zz', 1700000000)).toBe(false);
  });
});
