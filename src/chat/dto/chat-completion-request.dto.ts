export { MAX_TOKENS_LIMIT } from './chat-completion.schema';

/** OpenAI's `null` means "the default", as if the field were absent. */
export const present = (_: object, value: unknown) => value !== undefined && value !== null;
export const FINITE = { allowNaN: false, allowInfinity: false };
