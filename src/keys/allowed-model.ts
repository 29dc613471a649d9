import { AuthContext } from '../common/http/gateway-request';
import { ErrorCode, GatewayError } from '../errors';

/**
 * A key with a model list may use only those models (chat, Responses, Messages, speech, and the replay of a kept
 * answer: docs/idempotency.md): 400 model_not_allowed otherwise. `null` is a model not known (a kept answer that
 * names none): only a key without a list may have it.
 */
export function assertModelAllowed(auth: AuthContext | undefined, modelId: string | null): void {
  const models = auth?.models;
  if (!models || (modelId !== null && models.includes(modelId))) return;
  const model = modelId === null ? 'of this request' : `"${modelId}"`;
  throw new GatewayError(ErrorCode.ModelNotAllowed, `This API key may not use the model ${model}; it may use: ${models.join(', ')}.`, 'model');
}
