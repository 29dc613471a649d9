import { readFileSync } from 'node:fs';
import { plainToInstance } from 'class-transformer';
import { validateSync, ValidationError } from 'class-validator';
import { parse } from 'yaml';
import { CatalogEntry, GatewayConfig, ProviderConfig } from './gateway-config.schema';

export class ConfigError extends Error {}

/** Loads and validates the catalog/provider file; any problem names the offending field. */
export function loadGatewayConfig(path: string): GatewayConfig {
  let raw: unknown;
  try {
    raw = parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ConfigError(`${path}: cannot read YAML: ${(err as Error).message}`);
  }
  return validateGatewayConfig(raw, path);
}

export function validateGatewayConfig(raw: unknown, source = 'config'): GatewayConfig {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ConfigError(`${source}: the file must be a YAML mapping with providers and catalog`);
  }
  const plain = raw as Record<string, unknown>;
  const providers = plain.providers;
  if (!providers || typeof providers !== 'object' || Array.isArray(providers)) {
    throw new ConfigError(`${source}: providers must be a mapping of provider name to settings`);
  }
  const config = plainToInstance(GatewayConfig, plain, { exposeDefaultValues: true });
  config.providers = Object.fromEntries(
    Object.entries(providers).map(([name, p]) => [name, plainToInstance(ProviderConfig, p, { exposeDefaultValues: true })]),
  );
  // Unknown keys are refused so that a misspelt optional key cannot silently fall back to its default.
  const strict = { whitelist: true, forbidNonWhitelisted: true };
  const problems = [
    ...flatten(validateSync(config, strict), ''),
    ...Object.entries(config.providers).flatMap(([name, p]) => flatten(validateSync(p, strict), `providers.${name}`)),
    ...crossCheck(config),
  ];
  if (problems.length > 0) {
    throw new ConfigError(`${source}: invalid configuration:\n  - ${problems.join('\n  - ')}`);
  }
  return config;
}

function flatten(errors: ValidationError[], parent: string): string[] {
  return errors.flatMap((e) => {
    const field = /^\d+$/.test(e.property) ? `${parent}[${e.property}]` : parent ? `${parent}.${e.property}` : e.property;
    const own = Object.entries(e.constraints ?? {}).map(([rule, msg]) =>
      rule === 'whitelistValidation' ? `${field}: unknown key` : `${field}: ${msg.replace(e.property, '').trim()} (got ${JSON.stringify(e.value)})`,
    );
    return [...own, ...flatten(e.children ?? [], field)];
  });
}

function crossCheck(config: GatewayConfig): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  config.catalog.forEach((m: CatalogEntry, i) => {
    if (!(m instanceof CatalogEntry)) return;
    if (seen.has(m.id)) problems.push(`catalog[${i}].id: duplicate id "${m.id}"`);
    seen.add(m.id);
    if (m.provider && !config.providers[m.provider]) {
      problems.push(`catalog[${i}].provider: unknown provider "${m.provider}"`);
    }
    if (m.kind === 'chat' && config.providers[m.provider]?.type === 'local' && m.upstream_model !== 'dev-echo') {
      problems.push(`catalog[${i}].upstream_model: the local provider's only chat model is "dev-echo"`);
    }
  });
  const activeTranscription = config.catalog.filter((m) => m.kind === 'transcription' && m.active);
  const anyTranscription = config.catalog.some((m) => m.kind === 'transcription');
  if (anyTranscription && activeTranscription.length !== 1) {
    problems.push(`catalog: exactly one transcription model must have active: true (found ${activeTranscription.length})`);
  }
  return problems;
}
