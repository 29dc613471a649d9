import OpenAI from 'openai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { fakeOpenAiProvider } from './fake-upstream';
import { RawConfig, TestApp } from './test-app';

export const FAKE_STT = { id: 'fake-stt', upstream: 'upstream-whisper-large' };
export const FAKE_TTS = { id: 'fake-tts', upstream: 'upstream-tts-hd', voices: ['alloy', 'echo'] };

export interface AudioProviderOptions {
  name?: string;
  requestMs?: number;
  /** Speech formats the fake speech model offers (default: the whole set). */
  speechFormats?: string[];
  fairUse?: number;
}

/**
 * A config edit: an openai-compatible provider at `baseUrl` whose transcription model becomes the active
 * one (local-stt stays in the catalog, inactive) and whose speech model is fake-tts.
 */
export function withFakeAudioProvider(baseUrl: string, options: AudioProviderOptions = {}) {
  const name = options.name ?? 'fake-audio';
  return (raw: RawConfig) => {
    raw.providers[name] = fakeOpenAiProvider(baseUrl, options.requestMs);
    for (const entry of raw.catalog) if (entry.kind === 'transcription') entry.active = false;
    raw.catalog.push({ id: FAKE_STT.id, kind: 'transcription', provider: name, upstream_model: FAKE_STT.upstream, active: true });
    raw.catalog.push({
      id: FAKE_TTS.id,
      kind: 'speech',
      provider: name,
      upstream_model: FAKE_TTS.upstream,
      voices: FAKE_TTS.voices,
      ...(options.speechFormats ? { response_formats: options.speechFormats } : {}),
    });
    if (options.fairUse !== undefined) raw.fair_use = { monthly_requests: options.fairUse };
  };
}

export function audioFixture(name: string): Buffer {
  return readFileSync(join(__dirname, '../fixtures/audio', name));
}

export function sdk(gw: TestApp, key: string): OpenAI {
  return new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
}

/** POSTs a multipart form to /v1/audio/transcriptions (for what the SDK would not send). */
export function postTranscription(gw: TestApp, key: string, form: FormData): Promise<Response> {
  return fetch(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
}

export function audioForm(fields: Record<string, string>, file?: { data: Buffer; name: string; type?: string }): FormData {
  const form = new FormData();
  if (file) form.append('file', new Blob([file.data], { type: file.type ?? 'application/octet-stream' }), file.name);
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  return form;
}

/** POSTs a raw body to /v1/audio/speech. */
export function postSpeech(gw: TestApp, key: string, body: unknown, contentType = 'application/json'): Promise<Response> {
  return fetch(`${gw.url}/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': contentType },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export async function errorOf(res: Response): Promise<{ status: number; code: string; message: string; param: string | null; type: string }> {
  const body: any = await res.json();
  return { status: res.status, ...body.error };
}

/** This UTC month's fair-use count of the account (0 before its first included request). */
export async function fairUseUsed(db: DataSource, accountId: string): Promise<number> {
  const rows = await db.query(`SELECT fair_use_used FROM monthly_counters WHERE account_id = $1 AND month = date_trunc('month', now() AT TIME ZONE 'UTC')::date`, [
    accountId,
  ]);
  return rows.length ? Number(rows[0].fair_use_used) : 0;
}

/** Polls until the fair-use count settles on `expected` (given-back requests are returned on close). */
export async function expectFairUse(db: DataSource, accountId: string, expected: number, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let used = await fairUseUsed(db, accountId);
  while (used !== expected && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 25));
    used = await fairUseUsed(db, accountId);
  }
  // Stay a moment to catch a late give-back that would take it below.
  await new Promise((r) => setTimeout(r, 100));
  expect(await fairUseUsed(db, accountId)).toBe(expected);
}

export interface AudioUsageRow {
  request_id: string;
  model: string | null;
  endpoint: string;
  status: number;
  error_code: string | null;
  audio_seconds: string;
  input_chars: number;
  cost_micros: string;
  streamed: boolean;
}

/** The account's usage records once `count` exist (they are written when each response closes). */
export async function audioUsageRows(db: DataSource, accountId: string, count: number, timeoutMs = 5000): Promise<AudioUsageRow[]> {
  const read = (): Promise<AudioUsageRow[]> =>
    db.query(
      `SELECT request_id, model, endpoint, status, error_code, audio_seconds, input_chars, cost_micros, streamed
         FROM usage_records WHERE account_id = $1 ORDER BY id`,
      [accountId],
    );
  const deadline = Date.now() + timeoutMs;
  let rows = await read();
  while (rows.length < count && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 25));
    rows = await read();
  }
  await new Promise((r) => setTimeout(r, 100));
  return read();
}

/** Balance, reserved and ledger of an account, to show that audio calls never touch credits. */
export async function creditsOf(db: DataSource, accountId: string): Promise<{ balance: string; reserved: string; ledger: unknown[] }> {
  const [account] = await db.query(`SELECT balance_micros, reserved_micros FROM accounts WHERE id = $1`, [accountId]);
  const ledger = await db.query(`SELECT id, kind, amount_micros FROM ledger_entries WHERE account_id = $1 ORDER BY id`, [accountId]);
  return { balance: account.balance_micros, reserved: account.reserved_micros, ledger };
}
