import { tokenUsageOf } from '../billing/request-cost';
import { responseUsage } from './response-body';

describe(responseUsage.name, () => {
  const chatUsage = {
    prompt_tokens: 2_000,
    completion_tokens: 300,
    total_tokens: 2_300,
    prompt_tokens_details: { cached_tokens: 1_536, cache_write_tokens: 64, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 192, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };

  it("maps chat's usage details to the Responses API's (input_tokens_details, output_tokens_details)", () => {
    expect(responseUsage(chatUsage)).toEqual({
      input_tokens: 2_000,
      input_tokens_details: { cached_tokens: 1_536, cache_write_tokens: 64 },
      output_tokens: 300,
      output_tokens_details: { reasoning_tokens: 192 },
      total_tokens: 2_300,
    });
  });

  it('reads back as the same token classes, so both shapes are billed alike', () => {
    expect(tokenUsageOf(responseUsage(chatUsage))).toEqual(tokenUsageOf(chatUsage));
  });

  it('shows the counts the request is billed on: invalid details as 0, subtotals cut to their total', () => {
    const odd = { prompt_tokens: 100, completion_tokens: 10, prompt_tokens_details: { cached_tokens: '50', cache_write_tokens: 500 }, completion_tokens_details: { reasoning_tokens: -1 } };
    expect(responseUsage(odd)).toMatchObject({ input_tokens_details: { cached_tokens: 0, cache_write_tokens: 100 }, output_tokens_details: { reasoning_tokens: 0 } });
  });

  it('carries the 1-hour cache writes (a part of cache_write_tokens) when the upstream tells them apart, read back alike', () => {
    const anthropic = { ...chatUsage, prompt_tokens_details: { cached_tokens: 1_536, cache_write_tokens: 64, cache_write_1h_tokens: 48 } };
    expect(responseUsage(anthropic)).toMatchObject({ input_tokens_details: { cached_tokens: 1_536, cache_write_tokens: 64, cache_write_1h_tokens: 48 } });
    expect(tokenUsageOf(responseUsage(anthropic))).toEqual(tokenUsageOf(anthropic));
    // More than the writes: cut to them, as billed.
    const over = { ...chatUsage, prompt_tokens_details: { cache_write_tokens: 64, cache_write_1h_tokens: 100 } };
    expect(responseUsage(over)).toMatchObject({ input_tokens_details: { cache_write_tokens: 64, cache_write_1h_tokens: 64 } });
  });

  it('has no usage without valid totals', () => {
    expect(responseUsage(undefined)).toBeNull();
    expect(responseUsage({ prompt_tokens: 'many', completion_tokens: 1 })).toBeNull();
  });
});
