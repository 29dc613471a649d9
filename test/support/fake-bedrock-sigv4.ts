import { createHash } from 'node:crypto';
import { IncomingMessage } from 'node:http';
import { HttpRequest } from '@smithy/core/protocols';
import { Hash } from '@smithy/core/serde';
import { SignatureV4 } from '@smithy/signature-v4';
import { RequestError } from './fake-bedrock-request';

/**
 * Signature Version 4 as AWS checks a request to Bedrock (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html):
 * the signature recomputed from the received method, path, query, signed headers and body with the fake's credentials.
 */

/** SigV4's canonical request, as the fake recomputes it (for the message AWS gives on a mismatch). */
class CheckingSigner extends SignatureV4 {
  canonicalRequestOf(request: HttpRequest, signedHeaders: string[], payloadHash: string): string {
    const canonical: Record<string, string> = {};
    for (const name of signedHeaders) canonical[name] = String(request.headers[name] ?? '').trim().replace(/\s+/g, ' ');
    return this.createCanonicalRequest(request, canonical, payloadHash);
  }
}

/** SigV4 as AWS checks it: the key id, the scope, and the signature over the canonical request. */
export async function checkSignature(
req: IncomingMessage,
{ path, query, body }: { path: string; query: string; body: Buffer },
fake: { accessKeyId: string; secretAccessKey: string; region: string },
record: { signatureValid: boolean | null },
): Promise<void> {
  const auth = String(req.headers.authorization ?? '');
  const parsed = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(auth);
  if (!auth) throw new RequestError(403, 'MissingAuthenticationTokenException', 'Missing Authentication Token');
  if (!parsed) throw new RequestError(400, 'IncompleteSignatureException', `Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters. Authorization=${auth.split(' ')[0]}`);
  const [, keyId, , region, service, signedList, signature] = parsed;
  if (keyId !== fake.accessKeyId) throw new RequestError(403, 'UnrecognizedClientException', 'The security token included in the request is invalid.');
  if (service !== 'bedrock' || region !== fake.region) {
    throw new RequestError(403, 'InvalidSignatureException', `Credential should be scoped to a valid region and to the service 'bedrock'.`);
  }
  const amzDate = String(req.headers['x-amz-date'] ?? '');
  const date = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
  if (!date) throw new RequestError(400, 'IncompleteSignatureException', 'Authorization header requires existence of either a \'X-Amz-Date\' or a \'Date\' header.');
  const signedHeaders = signedList.split(';');
  const headers: Record<string, string> = {};
  for (const name of signedHeaders) {
    const value = req.headers[name];
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  const sessionToken = headers['x-amz-security-token'];
  const signer = new CheckingSigner({
    service: 'bedrock',
    region: fake.region,
    credentials: { accessKeyId: fake.accessKeyId, secretAccessKey: fake.secretAccessKey, ...(sessionToken && { sessionToken }) },
    sha256: Hash.bind(null, 'sha256'),
  });
  const request = new HttpRequest({ method: req.method, protocol: 'http:', hostname: '127.0.0.1', path, query: parseQuery(query), headers, body });
  const signingDate = new Date(Date.UTC(+date[1], +date[2] - 1, +date[3], +date[4], +date[5], +date[6]));
  const signed = await signer.sign(request, { signingDate });
  const expected = /Signature=([0-9a-f]{64})/.exec(String(signed.headers.authorization))?.[1];
  const expectedList = /SignedHeaders=([^,]+)/.exec(String(signed.headers.authorization))?.[1];
  record.signatureValid = expected === signature && expectedList === signedList;
  if (!record.signatureValid) {
    const payloadHash = createHash('sha256').update(body).digest('hex');
    const canonical = signer.canonicalRequestOf(request, signedHeaders, payloadHash);
    throw new RequestError(
      403,
      'InvalidSignatureException',
      `The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.\n\nThe Canonical String for this request should have been\n'${canonical}'\n`,
    );
  }
}

function parseQuery(query: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(query)) out[k] = v;
  return out;
}
