import Ajv2020, { ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

export const SPEC_PATH = join(__dirname, '../fixtures/openai-openapi.yaml');
let ajv: Ajv2020 | null = null;
const compiled = new Map<string, ValidateFunction>();

function load(): Ajv2020 {
  if (ajv) return ajv;
  const spec = parse(readFileSync(SPEC_PATH, 'utf8'), { maxAliasCount: -1 });
  ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  ajv.addFormat('unixtime', { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= 0 });
  ajv.addSchema({ $id: 'openai', components: normalizeNullable(spec.components) }, 'openai');
  return ajv;
}

/**
 * The document mixes OpenAPI 3.0's `nullable` into 3.1 schemas (beside `$ref`/`oneOf` without a `type`,
 * or beside an `enum` that lacks null), which Ajv refuses or misreads; it is rewritten to its meaning.
 */
export function normalizeNullable(node: any): any {
  if (Array.isArray(node)) return node.map(normalizeNullable);
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, any> = {};
  for (const [k, v] of Object.entries(node)) out[k] = normalizeNullable(v);
  if (!('nullable' in out)) return out;
  const { nullable, ...rest } = out;
  if (!nullable) return rest;
  if (!('type' in rest)) return { anyOf: [rest, { type: 'null' }] };
  const types = Array.isArray(rest.type) ? rest.type : [rest.type];
  return {
    ...rest,
    type: types.includes('null') ? types : [...types, 'null'],
    ...(Array.isArray(rest.enum) && !rest.enum.includes(null) ? { enum: [...rest.enum, null] } : {}),
  };
}

/**
 * A validator for one schema of OpenAI's published API (test/fixtures/openai-openapi.yaml, a copy of the binding ../shared/openai-openapi.yaml), e.g.
 * `CreateChatCompletionResponse`. On failure, `validator.errors` says what did not match.
 */
export function openApiValidator(schemaName: string): ValidateFunction {
  let validate = compiled.get(schemaName);
  if (!validate) {
    validate = load().compile({ $ref: `openai#/components/schemas/${schemaName}` });
    compiled.set(schemaName, validate);
  }
  return validate;
}

/** Asserts `body` validates against the named schema, printing the mismatches when it does not. */
export function expectValidAgainst(schemaName: string, body: unknown): void {
  const validate = openApiValidator(schemaName);
  if (!validate(body)) {
    throw new Error(`Body does not validate against ${schemaName}: ${JSON.stringify(validate.errors, null, 2)}\n${JSON.stringify(body)}`);
  }
}
