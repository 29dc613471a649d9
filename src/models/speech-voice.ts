import { ErrorCode, GatewayError } from '../errors';
import { CatalogEntry } from '../config/gateway-config.schema';
import { quotedClientText } from './requested-model';

/**
 * The model's own voice for what the client sent as `voice`: one of its `voices`, or an alias of one
 * (`voice_aliases`, e.g. OpenAI's names); nothing sent (or null): the model's first voice. Anything else is 400
 * `invalid_input` listing the names accepted. A model without a `voices` list passes any voice through.
 */
export function resolveVoice(model: CatalogEntry, requested: string | null | undefined): string {
  if (requested === undefined || requested === null) {
    const fallback = model.voices?.[0];
    if (fallback === undefined) throw new GatewayError(ErrorCode.InvalidInput, `The model "${model.id}" has no default voice; send voice.`, 'voice');
    return fallback;
  }
  const aliases = model.voice_aliases ?? {};
  // An own property only: a client's "constructor" or "__proto__" is a name like any other.
  if (Object.hasOwn(aliases, requested)) return aliases[requested];
  if (!model.voices || model.voices.includes(requested)) return requested;
  const aliasNames = Object.keys(aliases);
  const accepted = `voices: ${model.voices.join(', ')}${aliasNames.length ? `; aliases: ${aliasNames.join(', ')}` : ''}`;
  throw new GatewayError(ErrorCode.InvalidInput, `Invalid voice ${quotedClientText(requested)} for ${model.id}; ${accepted}.`, 'voice');
}
