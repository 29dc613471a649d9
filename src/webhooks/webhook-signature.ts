import { createHmac, timingSafeEqual } from 'node:crypto';

/** The header a webhook call carries (docs/operations.md, "Webhooks"). */
export const SIGNATURE_HEADER = 'gateway-signature';

/** `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`: the timestamp is signed too, so a receiver can refuse old replays. */
export function signatureHeader(secret: string, body: string, unixSeconds: number): string {
  return `t=${unixSeconds},v1=${hmac(secret, `${unixSeconds}.${body}`)}`;
}

/**
 * Whether `header` signs `body` with `secret`, and no longer ago than `toleranceS` (what a receiver does; the
 * gateway uses it in its tests, docs/operations.md shows the same steps).
 */
export function verifySignature(secret: string, body: string, header: string, nowS: number, toleranceS = 300): boolean {
  const parts = new Map(header.split(',').map((part) => part.split('=', 2) as [string, string]));
  const t = Number(parts.get('t'));
  const v1 = parts.get('v1') ?? '';
  if (!Number.isInteger(t) || Math.abs(nowS - t) > toleranceS || !/^[0-9a-f]{64}$/.test(v1)) return false;
  return timingSafeEqual(Buffer.from(v1, 'hex'), Buffer.from(hmac(secret, `${t}.${body}`), 'hex'));
}

function hmac(secret: string, text: string): string {
  return createHmac('sha256', secret).update(text).digest('hex');
}
