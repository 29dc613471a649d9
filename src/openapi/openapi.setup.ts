import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { describeErrorCode, ErrorCode } from '../common/errors';
import { ROUTE_DOCS, RouteAuth, RouteDoc } from './route-docs';

type Operation = Record<string, unknown> & { parameters?: Record<string, unknown>[] };

const SHARED_ERRORS: Record<RouteAuth, ErrorCode[]> = {
  api_key: [ErrorCode.InvalidApiKey, ErrorCode.InternalError],
  // 429: an address that sent too many wrong admin tokens (AdminTokenThrottle).
  admin_token: [ErrorCode.InvalidAdminToken, ErrorCode.RateLimitExceeded, ErrorCode.InternalError],
  none: [],
};

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
 * The OpenAPI document of every route: Nest's scan of the controllers, completed with the contract
 * of ROUTE_DOCS (bodies, success media types, security and each route's error codes by status).
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
  const document = SwaggerModule.createDocument(app, config);
  document.components = { ...document.components, schemas: { ...document.components?.schemas, ErrorResponse: ERROR_SCHEMA } };
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item as Record<string, Operation>)) {
      const route = ROUTE_DOCS[`${method.toUpperCase()} ${path}`];
      if (route) describeOperation(operation, route);
    }
  }
  dropEmptyDtoSchemas(document);
  return document;
}

/** Serves Swagger UI at /docs and the document at /docs/openapi.json (assets from swagger-ui-dist, no CDN). */
export function setupOpenApi(app: INestApplication): void {
  SwaggerModule.setup('docs', app, () => buildOpenApiDocument(app), {
    jsonDocumentUrl: 'docs/openapi.json',
    yamlDocumentUrl: 'docs/openapi.yaml',
  });
}

function describeOperation(operation: Operation, route: RouteDoc): void {
  const codes = [...new Set([...route.errors, ...SHARED_ERRORS[route.auth]])];
  operation.tags = [route.tag];
  operation.summary = route.summary;
  operation.security = route.auth === 'none' ? [] : [{ [route.auth]: [] }];
  operation['x-error-codes'] = codes;
  if (route.requestBody) {
    operation.requestBody = { required: true, content: { [route.requestBody.contentType]: { schema: route.requestBody.schema } } };
  }
  if (route.query) {
    const path = (operation.parameters ?? []).filter((p) => p.in !== 'query');
    const query = Object.entries(route.query).map(([name, description]) => ({ name, in: 'query', required: false, description, schema: { type: 'string' } }));
    operation.parameters = [...path, ...query];
  }
  const content = Object.fromEntries(Object.entries(route.success.content ?? {}).map(([type, schema]) => [type, { schema }]));
  operation.responses = { [route.success.status]: { description: route.success.description, content }, ...errorResponses(codes) };
}

function errorResponses(codes: ErrorCode[]): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const { status } = describeErrorCode(code);
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus.entries()].sort(([a], [b]) => a - b).map(([status, list]) => [
      status,
      {
        description: list.map((c) => (c === ErrorCode.UpstreamRejected ? `${c} (the upstream's own 4xx status)` : c)).join(', '),
        'x-error-codes': list,
        content: {
          'application/json': {
            schema: { $ref: '#/components/schemas/ErrorResponse' },
            examples: Object.fromEntries(
              list.map((code) => [code, { value: { error: { message: '…', type: describeErrorCode(code).type, param: null, code } } }]),
            ),
          },
        },
      },
    ]),
  );
}

/** The scan lists DTO classes without properties (they carry class-validator, not swagger, decorators). */
function dropEmptyDtoSchemas(document: OpenAPIObject): void {
  const schemas = document.components?.schemas ?? {};
  const used = JSON.stringify(document.paths);
  for (const name of Object.keys(schemas)) {
    if (!used.includes(`"#/components/schemas/${name}"`) && name !== 'ErrorResponse') delete schemas[name];
  }
}
