import { PRICE_FACTS } from '../providers/chat-contract';
import { answerPriceFacts } from './answer-price-facts';

describe(answerPriceFacts.name, () => {
  it("reads an OpenAI-shaped answer's own service_tier, and nothing from an answer that reports none", () => {
    expect(answerPriceFacts({ choices: [], service_tier: 'priority' })).toEqual({ service_tier: 'priority' });
    expect(answerPriceFacts({ choices: [] })).toBeUndefined();
    expect(answerPriceFacts({ choices: [], service_tier: null })).toBeUndefined();
  });

  it('keeps the facts of a stream whose chunks repeat the same tier, without a new object per chunk', () => {
    const first = answerPriceFacts({ choices: [], service_tier: 'flex' });
    expect(answerPriceFacts({ choices: [], service_tier: 'flex' }, first)).toBe(first);
    expect(answerPriceFacts({ choices: [], service_tier: 'default' }, first)).toEqual({ service_tier: 'default' });
  });

  it("lets a provider's facts win, field by field; a later chunk's tool uses replace the earlier (Anthropic's counts are cumulative)", () => {
    const start = answerPriceFacts({ choices: [], [PRICE_FACTS]: { service_tier: 'standard', speed: 'fast', inference_geo: 'us' } });
    const end = answerPriceFacts({ choices: [], [PRICE_FACTS]: { speed: 'standard', tool_uses: { web_search: 2 } } }, start);
    expect(end).toEqual({ service_tier: 'standard', speed: 'standard', inference_geo: 'us', tool_uses: { web_search: 2 } });
    expect(start).toEqual({ service_tier: 'standard', speed: 'fast', inference_geo: 'us' });
  });
});
