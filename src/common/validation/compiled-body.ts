import Ajv, { ErrorObject } from 'ajv';
import type { SchemaObject } from '@nestjs/swagger';

/** The first thing wrong with a body: the field's path as `param` names it (`stream_options.include_usage`, `messages[2]`), and what is wrong. */
export interface BodyProblem {
  path: string;
  /** In class-validator's words, which the error messages used before: "max_tokens must not be less than 1". */
  message: string;
  /** The ajv keyword that failed (`type`, `minimum`, `required`, …), for a pipe that words some fields itself. */
  keyword: string;
}

/** Checks a parsed JSON body: null when it passes, else its first problem. */
export type BodyCheck = (body: unknown) => BodyProblem | null;

/**
 * One ajv for every request body. `allErrors: false` stops at the first problem (the one a 400 names,
 * and linear time whatever the body); `nullable` is OpenAI's "null means the default", written as
 * OpenAPI 3.0 writes it so that the same schema goes into the document; `verbose` gives a failed
 * keyword its schema, read only when a body fails.
 */
const ajv = new Ajv({ allErrors: false, verbose: true, strict: true, strictNumbers: true });

/**
 * Compiles a body's schema once (at startup: call it at module level). Fields are checked in the
 * order of the schema's `properties`, each field's type before its range, so the order of the checks
 * is written in the schema itself.
 */
export function compileBody(schema: SchemaObject): BodyCheck {
  const validate = ajv.compile(schema);
  return (body) => (validate(body) ? null : problemOf(validate.errors![0]));
}

function problemOf(error: ErrorObject): BodyProblem {
  const segments = error.instancePath.split('/').slice(1).map(unescapePointer);
  if (error.keyword === 'required') segments.push(String(error.params.missingProperty));
  const path = segments.reduce((at, s) => (/^\d+$/.test(s) ? `${at}[${s}]` : at ? `${at}.${s}` : s), '');
  const property = segments.at(-1) ?? 'body';
  return { path, message: `${property} ${wording(error)}`, keyword: error.keyword };
}

/** What class-validator said for the same failure (its decorators' default messages). */
function wording(error: ErrorObject): string {
  const schema = (error.parentSchema ?? {}) as SchemaObject;
  if (schema.enum) return `must be one of the following values: ${schema.enum.filter((v) => v !== null).join(', ')}`;
  switch (error.keyword) {
    case 'type':
      return TYPE_WORDING[String(schema.type)] ?? `must be of type ${String(schema.type)}`;
    case 'minimum':
      return `must not be less than ${String(error.params.limit)}`;
    case 'maximum':
      return `must not be greater than ${String(error.params.limit)}`;
    case 'minLength':
      return 'should not be empty';
    case 'minItems':
      return 'should not be empty';
    case 'required':
      return 'is required';
    default:
      return 'is invalid';
  }
}

const TYPE_WORDING: Record<string, string> = {
  string: 'must be a string',
  boolean: 'must be a boolean value',
  integer: 'must be an integer number',
  number: 'must be a number conforming to the specified constraints',
  object: 'must be an object',
  array: 'must be an array',
};

const unescapePointer = (segment: string) => segment.replace(/~1/g, '/').replace(/~0/g, '~');
