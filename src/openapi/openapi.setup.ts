import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { OperationObject, ParameterObject, PathItemObject } from '@nestjs/swagger';
import { ErrorCode } from '../errors';

const ERROR_SCHEMA = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['message', 'type', 'param', 'code'],
      properties: {
        message: { type: 'string', description: 'Human-readable; the wording may change' },
        type: { type: 'string', description: 'invalid_request_error, authentication_error, insufficient_quota, rate_limit_error, api_error' },
        param: { type: 'string', nullable: true },
        code: { type: 'string', enum: Object.values(ErrorCode), description: 'Stable and machine-readable: handle errors on this field' },
      },
    },
  },
};

/**
 * The OpenAPI document of every route, generated from the controllers: each route's `@ApiRoute`
 * (src/openapi/api-route.decorator.ts) gives its tag, summary, security, success body and error codes,
 * and the DTO classes' `@ApiProperty` give the bodies and query parameters.
 */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('AI gateway')
    .setDescription(
      'OpenAI-compatible gateway (/v1, API key) and its operator API (/admin/v1, admin token). ' +
        'Every error body is {"error": {message, type, param, code}}; clients act on `code`.',
    )
    .setVersion('1')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'gwk_<43 base62><6 base62 checksum>' }, 'api_key')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN' }, 'admin_token')
    .build();
  const document = SwaggerModule.createDocument(app, config, { autoTagControllers: false });
  const schemas = document.components?.schemas ?? {};
  // StrictValidationPipe refuses any field a DTO does not declare.
  for (const schema of Object.values(schemas)) if ('properties' in schema) schema.additionalProperties = false;
  document.components = { ...document.components, schemas: { ...schemas, ErrorResponse: ERROR_SCHEMA } };
  document.paths = Object.fromEntries(Object.entries(document.paths).map(([path, item]) => nameRestOfPath(path, item)));
  return document;
}

/**
 * Fastify's router names the rest of a path `*` (the model route's, whose ids hold slashes), which Swagger
 * writes as `{path}` with a parameter named `*`; the document names it `id`, as the route reads it.
 */
function nameRestOfPath(path: string, item: PathItemObject): [string, PathItemObject] {
  if (!path.endsWith('/{path}')) return [path, item];
  for (const operation of Object.values(item) as OperationObject[]) {
    for (const parameter of (operation.parameters ?? []) as ParameterObject[]) if (parameter.name === '*') parameter.name = 'id';
  }
  return [`${path.slice(0, -'{path}'.length)}{id}`, item];
}

/** Serves Swagger UI at /docs and the document at /docs/openapi.json (assets from swagger-ui-dist, no CDN). */
export function setupOpenApi(app: INestApplication): void {
  SwaggerModule.setup('docs', app, () => buildOpenApiDocument(app), {
    jsonDocumentUrl: 'docs/openapi.json',
    yamlDocumentUrl: 'docs/openapi.yaml',
  });
}
