/**
 * How an upstream call failed, before any endpoint decides what the client sees: chat maps
 * everything but `rejected` to 502 upstream_error; transcription maps `unreachable` and `timeout`
 * to 504 (DESIGN.md section 5 step 7).
 */
export type UpstreamFailureKind =
  | 'unreachable' // connection refused, DNS failure, connect timeout
  | 'timeout' // no answer (or a silent stream) within timeouts.request_ms
  | 'server_error' // upstream 5xx
  | 'bad_response' // malformed body, broken or reset connection mid-answer
  | 'rejected' // upstream 4xx: its status and message pass through
  | 'engine_missing'; // local provider: a required binary (ffmpeg, espeak-ng, pocketsphinx) is not installed

export class UpstreamFailure extends Error {
  constructor(
    readonly kind: UpstreamFailureKind,
    message: string,
    /** The upstream's HTTP status, when it answered. */
    readonly status: number | null = null,
  ) {
    super(message);
  }
}
