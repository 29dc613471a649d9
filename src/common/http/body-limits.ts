import { LimitsConfig } from '../../config/gateway-config.schema';

/** Room for a multipart form's boundaries, part headers and text fields beside a file of the maximum size. */
export const FORM_OVERHEAD_BYTES = 64 * 1024;

/**
 * The largest body the gateway reads on any route: a JSON body (limits.json_body_max_bytes) or an upload
 * with its form (limits.transcription_max_bytes and FORM_OVERHEAD_BYTES). A body refused before it was read
 * is read and dropped up to this many bytes (discardUnreadBody), so that any body a client of the gateway may
 * send is answered rather than cut.
 */
export function largestReadBody(limits: LimitsConfig): number {
  return Math.max(limits.json_body_max_bytes, limits.transcription_max_bytes + FORM_OVERHEAD_BYTES);
}
