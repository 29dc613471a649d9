import type { SchemaObject } from '@nestjs/swagger';

/** Building blocks for the schemas of bodies that are not DTO classes (see ApiRoute). */
export const string: SchemaObject = { type: 'string' };
export const number: SchemaObject = { type: 'number' };
export const json = (schema: SchemaObject): Record<string, SchemaObject> => ({ 'application/json': schema });
export const object = (properties: Record<string, SchemaObject>, required: string[] = [], additionalProperties = false): SchemaObject => ({
  type: 'object',
  properties,
  // OpenAPI 3.0 wants `required` absent rather than empty.
  ...(required.length ? { required } : {}),
  additionalProperties,
});

/** A success answer with a JSON body. */
export const jsonAnswer = (status: number, description: string, schema: SchemaObject) => ({ status, description, content: json(schema) });

/** OpenAI's `null` means "the default", as if the field were absent (OpenAPI 3.0's `nullable`, which ajv reads too). */
export const orNull = (schema: SchemaObject): SchemaObject => ({ ...schema, nullable: true, ...(schema.enum ? { enum: [...schema.enum, null] } : {}) });

/**
 * A request body as the OpenAPI document shows it: the schema its pipe compiles (`checked`), with the
 * fields the pipe checks in code while translating them (`translated`: merged into the checked field of
 * the same name, or added) and the fields those later checks require.
 */
export function documentedBody(checked: SchemaObject, translated: Record<string, SchemaObject>, required: string[] = []): SchemaObject {
  const properties: Record<string, SchemaObject> = { ...(checked.properties as Record<string, SchemaObject>) };
  for (const [name, schema] of Object.entries(translated)) properties[name] = { ...properties[name], ...schema };
  const allRequired = [...new Set([...(checked.required ?? []), ...required])];
  return { ...checked, properties, ...(allRequired.length ? { required: allRequired } : {}) };
}
