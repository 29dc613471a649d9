import { ClassPrices } from './cost-oracle';

/**
 * The chat model every fault test calls, served by the cluster's upstream. Prices in USD per million tokens,
 * with cents in them so that the fake's default reply (12 + 5 tokens) costs a fraction of a µUSD over a whole
 * one (60.45): a charge that rounds down, rounds per token class or is off by one differs from the formula's.
 */
export const FAULT_MODEL: FaultModel = { id: 'fault-chat', input: 2.35, output: 6.45, maxOutput: 256 };
/** A model served by the cluster's second upstream (when asked for): the one malformed streams come from. */
export const BROKEN_MODEL: FaultModel = { id: 'broken-chat', input: 2.35, output: 6.45, maxOutput: 256 };

/** A chat model of the fault cluster's catalog; a token class without a price of its own costs the input or output price. */
export interface FaultModel extends ClassPrices {
  id: string;
  maxOutput: number;
}
