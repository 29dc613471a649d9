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

/** The 402 of a declined hold: which limit binds (credits, the account's limit, the key's), what is left of it, what was asked, what would fit. */
export function declined(row: DeclinedGrow, input: ReserveInput): GatewayError {
  const tokens = Number(row.affordable_tokens);
  const ask =
    input.requestedMaxTokens === null
      ? `${input.promptTokens} prompt tokens and at least 1 output token cost ${usd(row.needed_micros)}`
      : `${input.promptTokens} prompt tokens and max_tokens ${input.requestedMaxTokens} may cost up to ${usd(row.needed_micros)}`;
  const affordable =
    tokens > 0 ? `at most ${tokens} output tokens are affordable` : 'not even the prompt with one output token is affordable';
  if (row.outcome === 'key_limit_reached') {
    return new GatewayError(
      ErrorCode.KeyLimitReached,
      `This API key's monthly limit is reached: ${usd(row.limit_remaining_micros ?? '0')} of this month's ${usd(row.limit_micros ?? '0')} key limit remains, ` +
        `but ${ask}; ${affordable} with this key. Raise the key's limit${input.requestedMaxTokens === null ? '' : ' or lower max_tokens'}.`,
    );
  }
  if (row.outcome === 'monthly_limit_reached') {
    return new GatewayError(
      ErrorCode.MonthlyLimitReached,
      `Monthly spending limit reached: ${usd(row.limit_remaining_micros ?? '0')} of this month's ${usd(row.limit_micros ?? '0')} limit remains, ` +
        `but ${ask}; ${affordable}. Raise the limit${input.requestedMaxTokens === null ? '' : ' or lower max_tokens'}.`,
    );
  }
  return new GatewayError(
    ErrorCode.InsufficientCredits,
    `Insufficient credits: ${usd(row.available_micros)} available, but ${ask}; ${affordable}. ` +
      `Top up credits${input.requestedMaxTokens === null ? '' : ' or lower max_tokens'}.`,
  );
}

function usd(micros: string): string {
  const value = BigInt(micros);
  return value < 0n ? `-$${microsToUsd(-value)}` : `$${microsToUsd(value)}`;
}
