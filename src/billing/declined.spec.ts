import { CatalogEntry } from '../config/gateway-config.schema';
import { ErrorCode } from '../errors';
import { declined, DeclinedGrow } from './declined';
import { ReserveInput } from './reservation';

const input = (over: Partial<ReserveInput>): ReserveInput => ({
  accountId: 'a',
  requestId: 'r',
  model: {} as CatalogEntry,
  promptTokens: 69,
  requestedMaxTokens: 4096,
  ...over,
});

const row = (over: Partial<DeclinedGrow>): DeclinedGrow => ({
  outcome: 'insufficient_credits',
  available_micros: '1000',
  limit_micros: null,
  limit_remaining_micros: null,
  affordable_tokens: '87',
  needed_micros: '41046',
  ...over,
});

describe(declined.name, () => {
  it('says what the request was held for and why, what the balance covers, and both ways out', () => {
    const err = declined(row({}), input({}));
    expect(err.code).toBe(ErrorCode.InsufficientCredits);
    expect(err.message).toBe(
      'Insufficient credits: this request is held for up to 4,096 output tokens (its max_tokens) and a prompt of at most 69 tokens ' +
        "(bounded by its size; a charge counts the tokens the model reports), $0.041046 at the model's prices; " +
        'the balance of $0.001000 covers at most 87 output tokens with this prompt. Top up credits or lower max_tokens to at most 87.',
    );
  });

  it("names the dialect's own limit field (Responses: max_output_tokens; chat: max_completion_tokens)", () => {
    expect(declined(row({}), input({ limitParam: 'max_output_tokens' })).message).toContain('(its max_output_tokens)');
    expect(declined(row({}), input({ limitParam: 'max_output_tokens' })).message).toContain('lower max_output_tokens to at most 87');
  });

  it('does not advise a lower limit when not even one output token fits (the Messages API always sets max_tokens)', () => {
    const err = declined(row({ affordable_tokens: '0', available_micros: '50' }), input({ requestedMaxTokens: 1024 }));
    expect(err.message).toContain('the balance of $0.000050 does not cover this prompt with even 1 output token. Top up credits.');
    expect(err.message).not.toMatch(/lower max_tokens|at most 0/);
  });

  it('without a limit set, the hold is the prompt and one output token (the answer would be cut to fit)', () => {
    const err = declined(row({ affordable_tokens: '0', needed_micros: '70' }), input({ requestedMaxTokens: null, limitParam: 'max_completion_tokens' }));
    expect(err.message).toContain('held for at least 1 output token (no max_completion_tokens was set: the answer would be cut to what is affordable)');
    expect(err.message).toMatch(/does not cover this prompt with even 1 output token\. Top up credits\.$/);
  });

  it("without a limit set, for an upstream whose least output limit is above 1: held for that least answer, and what is affordable said", () => {
    const err = declined(row({ affordable_tokens: '9', needed_micros: '168' }), input({ requestedMaxTokens: null, minOutputTokens: 16, limitParam: 'max_output_tokens' }));
    expect(err.code).toBe(ErrorCode.InsufficientCredits);
    expect(err.message).toContain("held for at least 16 output tokens (no max_output_tokens was set: the answer would be cut to what is affordable, but not below 16, the least output limit the model's upstream takes)");
    expect(err.message).toMatch(/covers at most 9 output tokens with this prompt\. Top up credits\.$/);
  });

  it('counts output per choice when n > 1', () => {
    const err = declined(row({}), input({ choices: 3 }));
    expect(err.message).toContain('up to 4,096 output tokens for each of its 3 choices (n) (its max_tokens)');
    expect(err.message).toContain('covers at most 87 output tokens per choice with this prompt');
  });

  it("names the account's limit or the key's when one of them binds", () => {
    const limit = declined(row({ outcome: 'monthly_limit_reached', limit_micros: '500', limit_remaining_micros: '500', affordable_tokens: '37' }), input({}));
    expect(limit.code).toBe(ErrorCode.MonthlyLimitReached);
    expect(limit.message).toContain("$0.000500 of this month's $0.000500 spending limit remains, which covers at most 37 output tokens with this prompt. Raise the limit or lower max_tokens to at most 37.");
    const key = declined(row({ outcome: 'key_limit_reached', limit_micros: '2500', limit_remaining_micros: '0', affordable_tokens: '0' }), input({}));
    expect(key.code).toBe(ErrorCode.KeyLimitReached);
    expect(key.message).toMatch(/^This API key's monthly limit is reached: this request is held for/);
    expect(key.message).toContain("$0.000000 of this month's $0.002500 key limit remains, which does not cover this prompt with even 1 output token. Raise the key's limit.");
  });
});
