import 'reflect-metadata';
import { validateGatewayConfig } from '../config/gateway-config.loader';
import { PROVIDER_TYPES } from '../providers/provider-types';
import { CatalogService } from './catalog.service';

const chat = (id: string, aliases?: string[]) => ({
  id, kind: 'chat', provider: 'local', upstream_model: 'dev-echo', input_price_per_million: 1, output_price_per_million: 2, max_output_tokens: 100, ...(aliases ? { aliases } : {}),
});

/** A catalog of three chat models whose patterns overlap, and a speech model with an exact alias a pattern also matches. */
function catalog(): CatalogService {
  return new CatalogService(
    validateGatewayConfig({
      providers: { local: { type: 'local' } },
      catalog: [
        chat('claude-native', ['claude-latest']),
        chat('first', ['claude-*', 'gpt-*-sol']),
        chat('second', ['claude-opus-*', '*-mini-tts', '*']),
        { id: 'local-tts', kind: 'speech', provider: 'local', upstream_model: 'espeak-ng', voices: ['en'], aliases: ['gpt-4o-mini-tts'] },
      ],
    }, PROVIDER_TYPES),
  );
}

describe(CatalogService.name, () => {
  describe('find', () => {
    it.each([
      ['an id over every pattern that matches it', 'claude-native', 'claude-native'],
      ['an exact alias over every pattern that matches it', 'claude-latest', 'claude-native'],
      ["an exact alias over a later entry's pattern", 'gpt-4o-mini-tts', 'local-tts'],
      ['the first entry whose pattern matches, in catalog order', 'claude-opus-5-5', 'first'],
      ['a later pattern of the same entry', 'gpt-6.2-sol', 'first'],
      ["a later entry's pattern when no earlier one matches", 'gpt-4o-mini-tts-2', 'second'],
      ['the catch-all last', 'anything else', 'second'],
    ])('finds %s', (_case, name, id) => {
      const sut = catalog();
      expect(sut.find(name)?.id).toBe(id);
    });

    it('finds nothing for a name that no id, alias or pattern takes', () => {
      const sut = new CatalogService(validateGatewayConfig({ providers: { local: { type: 'local' } }, catalog: [chat('dev-echo', ['claude-*'])] }, PROVIDER_TYPES));
      expect(sut.find('claude')).toBeUndefined();
      expect(sut.find('gpt-6.2-sol')).toBeUndefined();
    });
  });

  it('records the name sent when a pattern of the entry that served took it, else the id', () => {
    const sut = catalog();
    expect(sut.recordedModel('first', 'claude-opus-5-5')).toBe('claude-opus-5-5');
    expect(sut.recordedModel('second', 'claude-opus-5-5')).toBe('second');
    expect(sut.recordedModel('local-tts', 'gpt-4o-mini-tts')).toBe('gpt-4o-mini-tts');
  });

  it('answers /v1/models/{name} for a pattern under that name, and never lists a pattern', () => {
    const sut = catalog();
    expect(sut.model('claude-opus-5-5')).toMatchObject({ id: 'claude-opus-5-5', owned_by: 'local' });
    expect(sut.anthropicModel('gpt-6.2-sol')).toMatchObject({ id: 'gpt-6.2-sol' });
    expect(sut.listing().data.map((m) => m.id)).toEqual(['claude-native', 'first', 'second', 'local-tts']);
  });

  it('names the exact names, and the patterns as LIKE patterns, for the usage views', () => {
    expect(catalog().names()).toEqual({
      exact: ['claude-native', 'first', 'second', 'local-tts', 'claude-latest', 'gpt-4o-mini-tts'],
      like: ['claude-%', 'gpt-%-sol', 'claude-opus-%', '%-mini-tts', '%'],
    });
  });
});
