import Ajv2020, { ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

const SPEC_PATH = join(__dirname, '../../../shared/openai-openapi.yaml');
let ajv: Ajv2020 | null = null;
const compiled = new Map<string, ValidateFunction>();

function load(): Ajv2020 {
  if (ajv) return ajv;
  const spec = parse(readFileSync(SPEC_PATH, 'utf8'), { maxAliasCount: -1 });
  ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  ajv.addFormat('unixtime', { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= 0 });
  ajv.addSchema({ $id: 'openai', components: spec.components }, 'openai');
  return ajv;
}

/**
 * A validator for one schema of OpenAI's published API (../shared/openai-openapi.yaml), e.g.
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
