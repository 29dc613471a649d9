import Ajv2020, { ErrorObject, ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { normalizeNullable, SPEC_PATH } from './openapi';

/**
 * The fake OpenAI's request checks, from OpenAI's own schema of every request body (test/fixtures/openai-openapi.yaml,
 * the copy of ../shared/openai-openapi.yaml): an argument the schema does not name is 400 "Unrecognized request
 * argument supplied: <field>", a body the schema refuses is 400 `invalid_request_error` naming the field, as OpenAI
 * answers (https://platform.openai.com/docs/guides/error-codes).
 *
 * The document is 3 MB of YAML (seconds to parse): the request schemas and what they reference are cut out once into
 * a JSON file in the OS's temporary folder, keyed by the document's size and time, and compiled once per process.
 */
export type OpenAiRequestSchema = 'CreateChatCompletionRequest' | 'CreateSpeechRequest' | 'CreateTranscriptionRequest' | 'CreateResponse';
const REQUESTS: OpenAiRequestSchema[] = ['CreateChatCompletionRequest', 'CreateSpeechRequest', 'CreateTranscriptionRequest', 'CreateResponse'];

/**
 * Where OpenAI's API takes what its published schema refuses, seen from its own client: the Codex CLI sends its history
 * back without the items' `id` (`skip_serializing`), an assistant message without `status` and its text as
 * `{type: "output_text", text}`, a reasoning item's `content` as `null` when it has no reasoning text (0.171.0 does on
 * every tool loop: `should_serialize_reasoning_content`) (codex-rs/protocol/src/models.rs, github.com/openai/codex), and
 * OpenAI serves it.
 */
const optional = (...fields: string[]) => (schema: any) => ({ ...schema, required: (schema.required ?? []).filter((f: string) => !fields.includes(f)) });
const nullable = (field: string) => (schema: any) => ({ ...schema, properties: { ...schema.properties, [field]: { anyOf: [schema.properties[field], { type: 'null' }] } } });
const LENIENCIES: Record<string, (schema: any) => any> = {
  ReasoningItem: (schema) => nullable('content')(optional('id')(schema)),
  OutputMessage: optional('id', 'status'),
  OutputTextContent: optional('annotations', 'logprobs'),
};

export interface OpenAiError {
  error: { message: string; type: 'invalid_request_error'; param: string | null; code: string | null };
}

let components: Record<string, any> | null = null;
let ajv: Ajv2020 | null = null;
const validators = new Map<OpenAiRequestSchema, ValidateFunction>();
const fieldSets = new Map<OpenAiRequestSchema, Set<string>>();

/** The component schemas the request schemas reach, from the cut-out file (written on first use). */
function schemas(): Record<string, any> {
  if (components) return components;
  const { size, mtimeMs } = statSync(SPEC_PATH);
  const cache = join(tmpdir(), `openai-request-schemas-${createHash('sha256').update(`${size}:${mtimeMs}:${REQUESTS.join()}`).digest('hex').slice(0, 16)}.json`);
  if (existsSync(cache)) return (components = lenient(JSON.parse(readFileSync(cache, 'utf8')) as Record<string, any>));
  const all = parse(readFileSync(SPEC_PATH, 'utf8'), { maxAliasCount: -1 }).components.schemas as Record<string, any>;
  const kept: Record<string, any> = {};
  const visit = (node: any): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!node || typeof node !== 'object') return;
    const ref = typeof node.$ref === 'string' ? node.$ref.split('/').pop() : undefined;
    if (ref && !(ref in kept)) {
      kept[ref] = normalizeNullable(all[ref]);
      visit(all[ref]);
    }
    for (const value of Object.values(node)) visit(value);
  };
  visit(REQUESTS.map((name) => ({ $ref: `#/components/schemas/${name}` })));
  writeFileSync(cache, JSON.stringify(kept));
  return (components = lenient(kept));
}

/**
 * Requests whose unions are checked as `anyOf`: Responses' item unions overlap (an `EasyInputMessage` is also an
 * `InputMessage`, an `item_reference` need not say its `type`), so "exactly one" refuses bodies that OpenAI serves,
 * picking the branch by `type`; a body no branch takes is still refused.
 */
const UNIONS_AS_ANY_OF = new Set<OpenAiRequestSchema>(['CreateResponse']);

function lenient(all: Record<string, any>): Record<string, any> {
  for (const [name, loosen] of Object.entries(LENIENCIES)) if (all[name]) all[name] = loosen(all[name]);
  return all;
}

function validatorOf(name: OpenAiRequestSchema): ValidateFunction {
  let validate = validators.get(name);
  if (!validate) {
    if (!ajv) {
      ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
      addFormats(ajv);
      ajv.addSchema({ $id: 'openai-requests', components: { schemas: schemas() } }, 'openai-requests');
      ajv.addSchema({ $id: 'openai-requests-any-of', components: { schemas: oneOfAsAnyOf(schemas()) } }, 'openai-requests-any-of');
    }
    validate = ajv.compile(flattened(name, UNIONS_AS_ANY_OF.has(name) ? 'openai-requests-any-of' : 'openai-requests'));
    validators.set(name, validate);
  }
  return validate;
}

/**
 * The request schema with its `allOf` parts merged: their properties together, a later part's over an earlier one's, as
 * the request's own definition overrides the shared base's (chat's `top_logprobs` is nullable, the base's is not); the
 * fields' own schemas still refer into the document.
 */
function flattened(name: OpenAiRequestSchema, document: string): Record<string, unknown> {
  const all = schemas();
  const properties: Record<string, unknown> = {};
  const required = new Set<string>();
  const merge = (node: any): void => {
    if (!node) return;
    if (node.$ref) return merge(all[String(node.$ref).split('/').pop()!]);
    (node.allOf ?? []).forEach(merge);
    for (const [field, schema] of Object.entries(node.properties ?? {})) properties[field] = rebase(document === 'openai-requests' ? schema : oneOfAsAnyOf(schema), document);
    for (const field of node.required ?? []) required.add(field);
  };
  merge({ $ref: name });
  return { type: 'object', properties, required: [...required] };
}

/** A schema whose `$ref`s point into an added document (`openai-requests#/components/...`). */
function rebase(node: any, document: string): any {
  if (Array.isArray(node)) return node.map((n) => rebase(n, document));
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) out[k] = k === '$ref' && typeof v === 'string' && v.startsWith('#/') ? `${document}${v}` : rebase(v, document);
  return out;
}

/** The schema with every `oneOf` read as `anyOf` (UNIONS_AS_ANY_OF). */
function oneOfAsAnyOf(node: any): any {
  if (Array.isArray(node)) return node.map(oneOfAsAnyOf);
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) out[k === 'oneOf' && !('anyOf' in node) ? 'anyOf' : k] = oneOfAsAnyOf(v);
  return out;
}

/** The top-level arguments a request schema names (its properties, through `$ref` and `allOf`). */
export function requestFields(name: OpenAiRequestSchema): Set<string> {
  let fields = fieldSets.get(name);
  if (!fields) {
    const all = schemas();
    const collect = (node: any): string[] => {
      if (!node) return [];
      if (node.$ref) return collect(all[String(node.$ref).split('/').pop()!]);
      return [...Object.keys(node.properties ?? {}), ...(node.allOf ?? []).flatMap(collect)];
    };
    fields = new Set(collect({ $ref: name }));
    fieldSets.set(name, fields);
  }
  return fields;
}

const invalid = (message: string, param: string | null, code: string | null): OpenAiError => ({ error: { message, type: 'invalid_request_error', param, code } });

/** OpenAI's refusal of `body` under the named request schema, or null when OpenAI would take it. */
export function openAiRequestProblem(name: OpenAiRequestSchema, body: Record<string, unknown>): OpenAiError | null {
  const unknown = Object.keys(body).find((field) => !requestFields(name).has(field));
  if (unknown !== undefined) return invalid(`Unrecognized request argument supplied: ${unknown}`, null, null);
  const validate = validatorOf(name);
  if (validate(body)) return null;
  const error = mostSpecific(validate.errors ?? []);
  const param = paramOf(error);
  if (error.keyword === 'required') return invalid(`Missing required parameter: '${param}'.`, param, 'missing_required_parameter');
  if (error.keyword === 'type') {
    // A nullable field's null is "the default" to OpenAI, which names only the type it wants.
    const types = String(error.params.type).split(',');
    const expected = (types.length > 1 ? types.filter((t) => t !== 'null') : types).map((t) => TYPE_NAMES[t] ?? t).join(' or ');
    return invalid(`Invalid type for '${param}': expected ${expected}, but got ${typeName(valueAt(body, error.instancePath))} instead.`, param, 'invalid_type');
  }
  return invalid(`Invalid value for '${param}': ${error.message ?? 'not allowed'}.`, param, 'invalid_value');
}

/** The deepest failure (an anyOf's branches each fail somewhere; the deepest one names the field that is wrong). */
function mostSpecific(errors: ErrorObject[]): ErrorObject {
  const concrete = errors.filter((e) => !['anyOf', 'oneOf', 'allOf', 'if', '$ref'].includes(e.keyword));
  const pool = concrete.length ? concrete : errors;
  return pool.reduce((best, e) => (depth(e) > depth(best) ? e : best), pool[0]);
}

function depth(error: ErrorObject): number {
  return error.instancePath.split('/').length + (error.keyword === 'required' ? 1 : 0);
}

/** `messages[0].content`, as OpenAI names a field in `param`. */
function paramOf(error: ErrorObject): string {
  const segments = error.instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (error.keyword === 'required') segments.push(String(error.params.missingProperty));
  return segments.reduce((at, s) => (/^\d+$/.test(s) ? `${at}[${s}]` : at ? `${at}.${s}` : s), '');
}

function valueAt(body: unknown, pointer: string): unknown {
  return pointer.split('/').slice(1).reduce<any>((at, s) => at?.[s.replace(/~1/g, '/').replace(/~0/g, '~')], body);
}

const TYPE_NAMES: Record<string, string> = { number: 'a decimal', integer: 'an integer', string: 'a string', boolean: 'a boolean', array: 'an array', object: 'an object', null: 'null' };

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'an integer' : 'a decimal';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
