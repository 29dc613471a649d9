import 'reflect-metadata';
import { parse } from 'yaml';
import { validateGatewayConfig } from '../src/config/gateway-config.loader';
import { PROVIDER_TYPES } from '../src/providers/provider-types';
import { docBlocks } from './support/readme-blocks';

/**
 * docs/configuration.md's ```yaml blocks are whole configurations an operator copies (the fuller example, one per
 * provider type): each loads as written, with the checks `npm start` runs on config/gateway.yaml.
 */
describe('the configurations of docs/configuration.md', () => {
  const blocks = docBlocks('docs/configuration.md', 'yaml');

  it('has the fuller example and one block per provider type', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(8);
    const types = new Set(blocks.flatMap((block) => Object.values((parse(block) as { providers: Record<string, { type: string }> }).providers).map((p) => p.type)));
    expect([...types].sort()).toEqual(Object.keys(PROVIDER_TYPES).sort());
  });

  it.each(blocks.map((block, i) => [i, block]))('block %i loads as written', (_i, block) => {
    const config = validateGatewayConfig(parse(block as string), PROVIDER_TYPES, 'docs/configuration.md');
    expect(config.catalog.length).toBeGreaterThan(0);
  });
});
