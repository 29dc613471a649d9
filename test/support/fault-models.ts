/** The chat model every fault test calls, served by the cluster's upstream. Prices in USD per million tokens. */
export const FAULT_MODEL = { id: 'fault-chat', input: 2, output: 6, maxOutput: 256 };
/** A model served by the cluster's second upstream (when asked for): the one malformed streams come from. */
export const BROKEN_MODEL = { id: 'broken-chat', input: 2, output: 6, maxOutput: 256 };
