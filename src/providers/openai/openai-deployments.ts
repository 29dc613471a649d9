import type { CatalogEntry } from '../../config/gateway-config.schema';
import type { PassThrough } from '../chat-contract';
import { MIN_OUTPUT_TOKENS } from './chat-to-responses';

/**
 * The least output limit a request can be sent upstream with: OpenAI's on its Responses API (16) for a Responses
 * request passed through and for an `upstream_api: responses` entry, else none (undefined). The hold declines an
 * allowance the credits would cut below it (docs/responses.md, "Output limit"): OpenAI would refuse it with a 400.
 */
export function leastOutputTokens(model: CatalogEntry, passThrough: PassThrough | undefined): number | undefined {
  return passThrough?.dialect === 'openai-responses' || model.upstream_api === 'responses' ? MIN_OUTPUT_TOKENS : undefined;
}
