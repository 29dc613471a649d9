import type { CatalogEntry } from '../config/gateway-config.schema';
import { toolFee } from '../config/price-options';
import { usdToMicros } from '../common/money';

/** A server tool's fee per use in µUSD, exactly, when the entry prices it (`tool_fees`: at most 6 decimals, checked at start). */
export function toolFeeMicros(model: CatalogEntry, tool: string): bigint | undefined {
  const fee = toolFee(model, tool);
  return fee === undefined ? undefined : usdToMicros(fee)!;
}

/**
 * What a hold adds for the server tools a request offers (DESIGN.md section 12.2): each priced tool's fee ×
 * its `max_uses`, else the entry's `tool_hold_uses`, in pico-USD.
 */
export function toolHoldPicos(model: CatalogEntry, tools: Record<string, number | null> | undefined): bigint {
  if (!tools) return 0n;
  let picos = 0n;
  for (const [name, maxUses] of Object.entries(tools)) {
    const fee = toolFeeMicros(model, name);
    if (fee === undefined) continue;
    const uses = maxUses ?? model.tool_hold_uses ?? 10;
    picos += fee * BigInt(uses) * 1_000_000n;
  }
  return picos;
}
