import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * The fake OpenAI's encrypted reasoning (`encrypted_content` of a `reasoning` item): opaque to clients and verifiable only
 * by the fake that issued it. OpenAI's are Fernet tokens (urlsafe base64 with padding, starting `gAAAAA`: the version
 * byte 0x80 and a timestamp; "gAAAAABpM0Yj-...=" in ../shared/openai-openapi.yaml's examples, "gAAA...DQ==" quoted in
 * github.com/openai/codex/issues/8145), so the fake issues Fernet tokens too (https://github.com/fernet/spec/blob/master/Spec.md): version, time, IV, the item's id and
 * summary under AES-128-CBC, and an HMAC-SHA256 over all of it, with `key` (32 bytes: signing half, encryption half).
 * A token verifies only when its HMAC does and it is, byte for byte, the text the fake wrote (no other base64 spelling
 * of the same bytes): what came back is what was issued.
 */

/** What a reasoning item's encrypted content carries. */
export interface SealedReasoning {
  id: string;
  summary: string[];
}

const VERSION = 0x80;
const HEADER = 1 + 8 + 16;
const MAC = 32;

/** A fresh Fernet token for `payload` (a new IV each time, as OpenAI's differ from event to event). */
export function sealReasoning(key: Buffer, payload: SealedReasoning): string {
  const iv = randomBytes(16);
  const time = Buffer.alloc(8);
  time.writeBigUInt64BE(BigInt(Math.floor(Date.now() / 1000)));
  const cipher = createCipheriv('aes-128-cbc', key.subarray(16, 32), iv);
  const body = Buffer.concat([Buffer.from([VERSION]), time, iv, cipher.update(JSON.stringify(payload), 'utf8'), cipher.final()]);
  return fernetBase64(Buffer.concat([body, sign(key, body)]));
}

/** The payload of a token this key issued, or null for anything else (tampered, cut, re-encoded, another key's). */
export function openReasoning(key: Buffer, token: unknown): SealedReasoning | null {
  if (typeof token !== 'string' || !/^[A-Za-z0-9_-]+={0,2}$/.test(token)) return null;
  const raw = Buffer.from(token.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (fernetBase64(raw) !== token || raw.length < HEADER + 16 + MAC || raw[0] !== VERSION) return null;
  const body = raw.subarray(0, raw.length - MAC);
  if (!timingSafeEqual(raw.subarray(raw.length - MAC), sign(key, body))) return null;
  try {
    const decipher = createDecipheriv('aes-128-cbc', key.subarray(16, 32), body.subarray(9, HEADER));
    const payload = JSON.parse(Buffer.concat([decipher.update(body.subarray(HEADER)), decipher.final()]).toString('utf8'));
    return typeof payload?.id === 'string' && Array.isArray(payload.summary) ? (payload as SealedReasoning) : null;
  } catch {
    return null;
  }
}

/**
 * What `response.output_item.added` carries for an encrypted reasoning item: the start of the final token. OpenAI's docs
 * warn that the added event's encrypted_content "may be incomplete" and that the completed item's (output_item.done) is
 * the one to send back (ReasoningItem.encrypted_content in ../shared/openai-openapi.yaml); this one never verifies.
 */
export function incompleteToken(token: string): string {
  return token.slice(0, Math.floor(token.length / 2));
}

/** A new 32-byte key (signing half, encryption half). */
export function newReasoningKey(): Buffer {
  return randomBytes(32);
}

function sign(key: Buffer, body: Buffer): Buffer {
  return createHmac('sha256', key.subarray(0, 16)).update(body).digest();
}

/** Fernet's spelling: urlsafe base64 that keeps its `=` padding. */
function fernetBase64(bytes: Buffer): string {
  return bytes.toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
}
