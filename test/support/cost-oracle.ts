/**
 * The tests' own oracle of what a chat request costs and holds (docs/billing.md, "Money and prices", "Token
 * classes", "Prompt bound of the hold"; DESIGN.md section 10), written out from the documentation, never with
 * the gateway's code: every spec that checks an amount, the fault suite included, compares the gateway's
 * charge with these figures. Prices are the catalog's, USD per million tokens (so µUSD per token).
 */

/**
 * The prices a catalog chat entry sets: the input and output prices, and the token classes' own (unset: the input
 * or output price; the 1-hour cache writes' unset: the cache-write price).
 */
export interface ClassPrices {
  input: number;
  output: number;
  cachedInput?: number;
  cacheWrite?: number;
  cacheWrite1h?: number;
  audioInput?: number;
  audioOutput?: number;
}

/** The catalog keys (gateway.yaml) of the token-class prices a model sets, those it sets. */
export function classPriceFields(m: Partial<ClassPrices>): Record<string, number> {
  const fields: Record<string, number | undefined> = {
    cached_input_price_per_million: m.cachedInput,
    cache_write_price_per_million: m.cacheWrite,
    cache_write_1h_price_per_million: m.cacheWrite1h,
    audio_input_price_per_million: m.audioInput,
    audio_output_price_per_million: m.audioOutput,
  };
  return Object.fromEntries(Object.entries(fields).filter(([, price]) => price !== undefined)) as Record<string, number>;
}

/**
 * Token counts by class, as the upstream reports them and the usage record keeps them: each class is a part of its
 * total (the 1-hour cache writes: of the cache writes, which count 5-minute and 1-hour writes alike).
 */
export interface ClassTokens {
  prompt: number;
  completion: number;
  cached?: number;
  cacheWrite?: number;
  cacheWrite1h?: number;
  audioIn?: number;
  audioOut?: number;
}

/**
 * The documented charge: each class of tokens at its price (the input or output price when the class has
 * none), exactly in pico-USD, then rounded up to the µUSD once for the whole request. The counts must
 * already fit their totals.
 */
export function costMicrosByClass(model: ClassPrices, tokens: ClassTokens): bigint {
  const { prompt, completion, cached = 0, cacheWrite = 0, cacheWrite1h = 0, audioIn = 0, audioOut = 0 } = tokens;
  const writePrice = model.cacheWrite ?? model.input;
  const picos =
    BigInt(prompt - cached - cacheWrite - audioIn) * picosPerToken(model.input) +
    BigInt(cached) * picosPerToken(model.cachedInput ?? model.input) +
    BigInt(cacheWrite - cacheWrite1h) * picosPerToken(writePrice) +
    BigInt(cacheWrite1h) * picosPerToken(model.cacheWrite1h ?? writePrice) +
    BigInt(audioIn) * picosPerToken(model.audioInput ?? model.input) +
    BigInt(completion - audioOut) * picosPerToken(model.output) +
    BigInt(audioOut) * picosPerToken(model.audioOutput ?? model.output);
  return roundUpToMicros(picos);
}

/**
 * The hold of a chat request: the prompt bound (the UTF-8 bytes of the messages' JSON + 3) at the highest
 * input-class price and the output allowance at the highest output-class price, rounded up once. No charge
 * may exceed it, so it also bounds a charge a test cannot know exactly.
 */
export function holdMicrosOf(model: ClassPrices, messages: unknown[], allowance: number): bigint {
  const highest = (...prices: (number | undefined)[]) =>
    prices.reduce<bigint>((max, p) => (p !== undefined && picosPerToken(p) > max ? picosPerToken(p) : max), 0n);
  const promptBound = BigInt(Buffer.byteLength(JSON.stringify(messages)) + 3);
  return roundUpToMicros(
    promptBound * highest(model.input, model.cachedInput, model.cacheWrite, model.cacheWrite1h, model.audioInput) + BigInt(allowance) * highest(model.output, model.audioOutput),
  );
}

/** A catalog price (USD per million tokens, at most six decimals as the config requires) in pico-USD per token, exactly. */
function picosPerToken(usdPerMillion: number): bigint {
  const match = /^(\d+)(?:\.(\d{1,6}))?$/.exec(String(usdPerMillion));
  if (!match) throw new Error(`price ${usdPerMillion}: a catalog price has at most six decimals`);
  return BigInt(match[1]) * 1_000_000n + BigInt((match[2] ?? '').padEnd(6, '0'));
}

function roundUpToMicros(picos: bigint): bigint {
  return (picos + 999_999n) / 1_000_000n;
}
