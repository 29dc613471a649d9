import { readFileSync } from 'node:fs';
import { plainToInstance } from 'class-transformer';
import { validateSync, ValidationError } from 'class-validator';
import { parse } from 'yaml';
import {
  CatalogEntry,
  DeploymentConfig,
  deploymentName,
  GatewayConfig,
  MODEL_KINDS,
  ModelKind,
  ProviderConfigBase,
  ProviderConfigType,
  ProviderConfigTypes,
} from './gateway-config.schema';
import { patternProblem } from './model-pattern';
import { voiceProblems } from './voice-aliases';

export class ConfigError extends Error {}

const WHICH_FILE = 'This is the catalog/provider file GATEWAY_CONFIG names (default config/gateway.yaml): fix it, or point GATEWAY_CONFIG at another.';

/**
 * Loads and validates the catalog/provider file; any problem names the offending field. `types` are the provider
 * types the gateway serves (providers/provider-types.ts), handed over by the caller: configuration sits below the
 * providers and never imports them.
 */
export function loadGatewayConfig(path: string, types: ProviderConfigTypes): GatewayConfig {
  let raw: unknown;
  try {
    raw = parse(readFileSync(path, 'utf8'));
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message;
    throw new ConfigError(`${path}: cannot read YAML: ${reason}. ${WHICH_FILE}`);
  }
  try {
    return validateGatewayConfig(raw, types, path);
  } catch (err) {
    throw err instanceof ConfigError ? new ConfigError(`${err.message}\n${WHICH_FILE}`) : err;
  }
}

export function validateGatewayConfig(raw: unknown, types: ProviderConfigTypes, source = 'config'): GatewayConfig {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ConfigError(`${source}: the file must be a YAML mapping with providers and catalog`);
  }
  const plain = raw as Record<string, unknown>;
  const providers = plain.providers;
  if (!providers || typeof providers !== 'object' || Array.isArray(providers)) {
    throw new ConfigError(`${source}: providers must be a mapping of provider name to settings`);
  }
  const config = plainToInstance(GatewayConfig, plain, { exposeDefaultValues: true });
  config.providers = Object.fromEntries(Object.entries(providers).map(([name, p]) => [name, providerConfig(p, types)]));
  const problems = [
    ...flatten(validateSync(config, STRICT), ''),
    ...Object.entries(config.providers).flatMap(([name, p]) => providerProblems(p, types, `providers.${name}`)),
    ...crossCheck(config, types),
  ];
  if (problems.length > 0) {
    throw new ConfigError(`${source}: invalid configuration:\n  - ${problems.join('\n  - ')}`);
  }
  return config;
}

/** Unknown keys are refused so that a misspelt optional key cannot silently fall back to its default. */
const STRICT = { whitelist: true, forbidNonWhitelisted: true };

/** A provider's settings as its type's config class (the base class for an unknown type, which then fails on its type). */
function providerConfig(raw: unknown, types: ProviderConfigTypes): ProviderConfigBase {
  const configClass = typeNamed((raw as { type?: unknown } | null)?.type, types)?.config ?? ProviderConfigBase;
  return plainToInstance(configClass, raw, { exposeDefaultValues: true });
}

function typeNamed(type: unknown, types: ProviderConfigTypes): ProviderConfigType | undefined {
  return typeof type === 'string' && Object.hasOwn(types, type) ? types[type] : undefined;
}

/** A provider's keys, checked by its type's class; a provider of an unknown type has no keys to check: its type is the problem. */
function providerProblems(p: ProviderConfigBase, types: ProviderConfigTypes, field: string): string[] {
  if (typeNamed(p.type, types)) return flatten(validateSync(p, STRICT), field);
  const typeProblem = `${field}.type: must be one of the following values: ${Object.keys(types).join(', ')} (got ${JSON.stringify(p.type)})`;
  return [typeProblem, ...flatten(validateSync(p), field)];
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

/** A provider that exists, of a type that serves the model's kind, and (local chat) a model it serves. */
function upstreamProblems(
  kind: ModelKind,
  upstream: { provider: string; upstream_model: string },
  config: GatewayConfig,
  types: ProviderConfigTypes,
  field: string,
): string[] {
  if (upstream.provider && !config.providers[upstream.provider]) return [`${field}.provider: unknown provider "${upstream.provider}"`];
  const type = config.providers[upstream.provider]?.type;
  const served = typeNamed(type, types)?.kinds;
  if (served && MODEL_KINDS.includes(kind) && !served.includes(kind)) {
    return [`${field}.provider: provider "${upstream.provider}" is of type ${type}, which serves ${served.join(', ')} models, not ${kind}`];
  }
  if (kind === 'chat' && config.providers[upstream.provider]?.type === 'local' && upstream.upstream_model !== 'dev-echo') {
    return [`${field}.upstream_model: the local provider's only chat model is "dev-echo"`];
  }
  return [];
}

/**
 * A model listing `deployments` names its upstreams there only; its `provider`/`upstream_model` become the
 * first deployment's (its owner in /v1/models). Both forms at once are refused, unless they agree (a
 * configuration read back from a loaded one).
 */
function deploymentProblems(m: CatalogEntry, config: GatewayConfig, types: ProviderConfigTypes, field: string): string[] {
  const deployments = m.deployments!.filter((d) => d instanceof DeploymentConfig);
  const primary = deployments[0];
  if (!primary) return [];
  if ((m.provider !== undefined && m.provider !== primary.provider) || (m.upstream_model !== undefined && m.upstream_model !== primary.upstream_model)) {
    return [`${field}.deployments: give either provider/upstream_model or deployments, not both`];
  }
  m.provider = primary.provider;
  m.upstream_model = primary.upstream_model;
  const problems: string[] = [];
  const seen = new Set<string>();
  deployments.forEach((d, j) => {
    const at = `${field}.deployments[${j}]`;
    const name = deploymentName(d);
    if (seen.has(name)) problems.push(`${at}: the same provider and upstream_model twice ("${name}")`);
    seen.add(name);
    problems.push(...upstreamProblems(m.kind, d, config, types, at));
  });
  return problems;
}

function crossCheck(config: GatewayConfig, types: ProviderConfigTypes): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  config.catalog.forEach((m: CatalogEntry, i) => {
    if (!(m instanceof CatalogEntry)) return;
    if (seen.has(m.id)) problems.push(`catalog[${i}].id: duplicate id "${m.id}"`);
    seen.add(m.id);
    if (Array.isArray(m.deployments)) {
      problems.push(...deploymentProblems(m, config, types, `catalog[${i}]`));
    } else {
      problems.push(...upstreamProblems(m.kind, m, config, types, `catalog[${i}]`));
    }
    // Any deployment may serve a request: a local one among them needs the voices its engine speaks.
    const upstreams: { provider: string }[] = Array.isArray(m.deployments) ? m.deployments : [m];
    const localEngine = upstreams.some((u) => config.providers[u.provider]?.type === 'local');
    problems.push(...voiceProblems(m, localEngine, `catalog[${i}]`));
    problems.push(...upstreamApiProblems(m, upstreams, config, `catalog[${i}]`));
  });
  problems.push(...aliasProblems(config.catalog));
  const activeTranscription = config.catalog.filter((m) => m.kind === 'transcription' && m.active);
  const anyTranscription = config.catalog.some((m) => m.kind === 'transcription');
  if (anyTranscription && activeTranscription.length !== 1) {
    problems.push(`catalog: exactly one transcription model must have active: true (found ${activeTranscription.length})`);
  }
  return problems;
}

/** `upstream_api: responses`: only OpenAI's own platform serves its Responses API, so every deployment must be `openai`. */
function upstreamApiProblems(m: CatalogEntry, upstreams: { provider: string }[], config: GatewayConfig, field: string): string[] {
  if (m.upstream_api !== 'responses') return [];
  if (m.kind !== 'chat') return [`${field}.upstream_api: "responses" is for chat models, not ${m.kind}`];
  const other = upstreams.find((u) => config.providers[u.provider] && config.providers[u.provider].type !== 'openai');
  if (!other) return [];
  const type = config.providers[other.provider].type;
  return [`${field}.upstream_api: "responses" needs every deployment on a provider of type openai, and provider "${other.provider}" is of type ${type}`];
}

/**
 * Every alias names one entry: none may be an id (its own entry's included) or another alias, and a pattern
 * must be one (config/model-pattern.ts). The aliases' form (strings of the id alphabet and `*`) is the schema's check.
 */
function aliasProblems(catalog: CatalogEntry[]): string[] {
  const entries = catalog.filter((m) => m instanceof CatalogEntry);
  const idAt = new Map<string, number>();
  entries.forEach((m) => idAt.set(m.id, idAt.get(m.id) ?? catalog.indexOf(m)));
  const aliasAt = new Map<string, number>();
  const problems: string[] = [];
  for (const m of entries) {
    const i = catalog.indexOf(m);
    if (!Array.isArray(m.aliases)) continue;
    m.aliases.forEach((alias, j) => {
      if (typeof alias !== 'string') return;
      const id = idAt.get(alias);
      const alsoAlias = aliasAt.get(alias);
      const patternWrong = patternProblem(alias);
      if (patternWrong) problems.push(`catalog[${i}].aliases[${j}]: the pattern "${alias}" ${patternWrong}`);
      else if (id !== undefined) problems.push(`catalog[${i}].aliases[${j}]: "${alias}" is already the id of catalog[${id}]`);
      else if (alsoAlias !== undefined) problems.push(`catalog[${i}].aliases[${j}]: "${alias}" is already an alias of catalog[${alsoAlias}] (${catalog[alsoAlias].id})`);
      else aliasAt.set(alias, i);
    });
  }
  return problems;
}
