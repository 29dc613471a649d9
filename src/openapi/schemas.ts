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
