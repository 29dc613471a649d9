import { AuthContext } from '../common/http/gateway-request';
import { ErrorCode, GatewayError } from '../errors';

/** A key with a model list may use only those models (chat, Responses, speech): 400 model_not_allowed otherwise. */
export function assertModelAllowed(auth: AuthContext | undefined, modelId: string): void {
  const models = auth?.models;
  if (!models || models.includes(modelId)) return;
  throw new GatewayError(ErrorCode.ModelNotAllowed, `This API key may not use the model "${modelId}"; it may use: ${models.join(', ')}.`, 'model');
}
