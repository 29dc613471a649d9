import { ErrorCode, GatewayError } from '../errors';
import { microsToUsd } from '../common/money';
import { ReserveInput } from './reservation';

/** The figures of a grow the database declined (billing_reserve_decide), as micro-USD in decimal text. */
export interface DeclinedGrow {
  outcome: string;
  available_micros: string;
  limit_micros: string | null;
  limit_remaining_micros: string | null;
  affordable_tokens: string;
  needed_micros: string;
}

/**
 * The 402 of a declined hold: which limit binds (credits, the account's limit, the key's) and what is left of
 * it, what the request was held for and why (a prompt bounded by its size, its output limit or one token), what
 * that leaves room for, and what would help. The prompt is the hold's bound, not a count: the message says so.
 */
export function declined(row: DeclinedGrow, input: ReserveInput): GatewayError {
  const affordable = Number(row.affordable_tokens);
  const param = input.limitParam ?? 'max_tokens';
  const choices = input.choices ?? 1;
  const each = choices > 1 ? ` for each of its ${choices} choices (n)` : '';
  const prompt = `a prompt of at most ${count(input.promptTokens)} tokens (bounded by its size; a charge counts the tokens the model reports)`;
  // With no limit set, the least answer: one token, or the least output limit the upstream takes (OpenAI's Responses API: 16).
  const least = input.minOutputTokens ?? 1;
  const output =
    input.requestedMaxTokens !== null
      ? `up to ${count(input.requestedMaxTokens)} output tokens${each} (its ${param})`
      : least > 1
        ? `at least ${count(least)} output tokens${each} (no ${param} was set: the answer would be cut to what is affordable, but not below ${count(least)}, the least output limit the model's upstream takes)`
        : `at least 1 output token${each} (no ${param} was set: the answer would be cut to what is affordable)`;
  const held = `this request is held for ${output} and ${prompt}, ${usd(row.needed_micros)} at the model's prices`;
  const room =
    affordable > 0
      ? `covers at most ${count(affordable)} output tokens${choices > 1 ? ' per choice' : ''} with this prompt`
      : 'does not cover this prompt with even 1 output token';
  // Lowering the output limit helps only when some output is affordable (then it always is the request's own limit).
  const lower = affordable > 0 && input.requestedMaxTokens !== null ? ` or lower ${param} to at most ${count(affordable)}` : '';

  if (row.outcome === 'key_limit_reached') {
    const left = `${usd(row.limit_remaining_micros ?? '0')} of this month's ${usd(row.limit_micros ?? '0')} key limit remains`;
    return new GatewayError(ErrorCode.KeyLimitReached, `This API key's monthly limit is reached: ${held}; ${left}, which ${room}. Raise the key's limit${lower}.`);
  }
  if (row.outcome === 'monthly_limit_reached') {
    const left = `${usd(row.limit_remaining_micros ?? '0')} of this month's ${usd(row.limit_micros ?? '0')} spending limit remains`;
    return new GatewayError(ErrorCode.MonthlyLimitReached, `Monthly spending limit reached: ${held}; ${left}, which ${room}. Raise the limit${lower}.`);
  }
  return new GatewayError(
    ErrorCode.InsufficientCredits,
    `Insufficient credits: ${held}; the balance of ${usd(row.available_micros)} ${room}. Top up credits${lower}.`,
  );
}

function count(n: number): string {
  return n.toLocaleString('en-US');
}

function usd(micros: string): string {
  const value = BigInt(micros);
  return value < 0n ? `-$${microsToUsd(-value)}` : `$${microsToUsd(value)}`;
}
