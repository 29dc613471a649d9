import { ErrorCode, GatewayError } from '../errors';
import { storableText } from '../common/storable-text';

/** The most of a client's model id (or other text) an error message repeats. */
const SHOWN_MODEL_LENGTH = 64;

/** A JSON request body with the `model` it names: the first checks of chat and speech (SPEC.md errors). */
export function readRequestedModel(body: unknown): { fields: Record<string, unknown>; modelId: string } {
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    throw new GatewayError(ErrorCode.InvalidRequest, 'The request body must be a JSON object.');
  }
  const fields = body as Record<string, unknown>;
  if (fields.model === undefined || fields.model === null || fields.model === '') {
    throw new GatewayError(ErrorCode.MissingModel, 'You must provide a model parameter.', 'model');
  }
  if (typeof fields.model !== 'string') {
    throw new GatewayError(ErrorCode.InvalidRequest, 'model must be a string.', 'model');
  }
  return { fields, modelId: fields.model };
}

/** A client's model id as an error message quotes it: storable, at most SHOWN_MODEL_LENGTH units, in JSON quotes. */
export function quotedModel(id: string): string {
  return quotedClientText(id);
}

/** Any text a client sent, as an error message quotes it (see quotedModel). */
export function quotedClientText(text: string): string {
  return JSON.stringify(storableText(text, SHOWN_MODEL_LENGTH));
}
