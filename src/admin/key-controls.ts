import { ErrorCode, GatewayError } from '../errors';
import { usdToMicros } from '../common/money';
import { parseIsoDate } from '../common/iso-date';
import { CatalogService } from '../models/catalog.service';
import { KeyControls } from '../keys/keys.service';
import { CreateKeyDto } from './dto/admin.dto';

/** The most ids a key's model list may hold (a catalog is far smaller). */
const MAX_MODELS = 1000;

/**
 * The controls a key body names (DESIGN.md section 10): fields left out stay undefined (a PATCH does not
 * change them), null clears one. `rawModels` is the body's own `models`: the DTO only knew it was an array.
 */
export function keyControls(body: CreateKeyDto, rawModels: unknown, catalog: CatalogService): KeyControls {
  const controls: KeyControls = {};
  if (body.name !== undefined) controls.name = body.name;
  if (body.monthly_limit_usd !== undefined) controls.monthlyLimitMicros = body.monthly_limit_usd === null ? null : usdToMicros(body.monthly_limit_usd);
  if (body.expires_at !== undefined) controls.expiresAt = body.expires_at === null ? null : parseIsoDate(body.expires_at);
  if (body.rpm !== undefined) controls.rpm = body.rpm;
  if (body.tpm !== undefined) controls.tpm = body.tpm;
  if (rawModels !== undefined) controls.models = rawModels === null ? null : catalogIds(rawModels, catalog);
  return controls;
}

function catalogIds(models: unknown, catalog: CatalogService): string[] {
  if (!Array.isArray(models) || models.length === 0) {
    throw new GatewayError(ErrorCode.InvalidRequest, 'models must be a non-empty array of catalog model ids, or null for all models.', 'models');
  }
  if (models.length > MAX_MODELS) throw new GatewayError(ErrorCode.InvalidRequest, `models holds at most ${MAX_MODELS} ids.`, 'models');
  const at = models.findIndex((id: unknown) => typeof id !== 'string' || !catalog.find(id));
  if (at >= 0) {
    throw new GatewayError(ErrorCode.InvalidRequest, `models[${at}] is not a model of the catalog; GET /v1/models lists them.`, `models[${at}]`);
  }
  // An alias stands for its entry: the list keeps ids, which the requests' models are checked against.
  return [...new Set((models as string[]).map((name) => catalog.find(name)!.id))];
}
