import { applyDecorators, SetMetadata } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiConsumes, ApiExtension, ApiOperation, ApiResponse, ApiTags, SchemaObject } from '@nestjs/swagger';
import { ErrorCode } from '../errors';
import { errorResponses, RouteAuth, SHARED_ERRORS } from './error-responses';


/** The contract of one route, declared beside it; the OpenAPI document is generated from it. */
export interface ApiRouteOptions {
  tag: 'v1' | 'admin' | 'operations' | 'dashboard';
  summary: string;
  auth: RouteAuth;
  /** Codes this route answers with, besides the ones every route of its `auth` kind shares. */
  errors: ErrorCode[];
  /** Success status, its description and the schema of each media type it may answer with. */
  success: { status: number; description: string; content?: Record<string, SchemaObject> };
  /** A body that is not a DTO class (a DTO-typed `@Body()` is documented from the class itself). */
  body?: { contentType: string; schema: SchemaObject };
}

export const API_ROUTE = 'gateway:apiRoute';

/** The route's codes: its own, then the shared ones of its auth kind, each once. */
export function routeErrorCodes(route: Pick<ApiRouteOptions, 'auth' | 'errors'>): ErrorCode[] {
  return [...new Set([...route.errors, ...SHARED_ERRORS[route.auth]])];
}

/**
 * Documents a route: tag, summary, security scheme, success body, and each error code under its
 * status with an example (`x-error-codes` on the operation and on each error response).
 *
 * @example
 * @Get(':id')
 * @ApiRoute({ tag: 'v1', summary: 'One model', auth: 'api_key', errors: [ErrorCode.NotFound],
 *   success: { status: 200, description: 'The model', content: json(modelSchema) } })
 */
export function ApiRoute(route: ApiRouteOptions): MethodDecorator {
  const codes = routeErrorCodes(route);
  const content = Object.fromEntries(Object.entries(route.success.content ?? {}).map(([type, schema]) => [type, { schema }]));
  return applyDecorators(
    SetMetadata(API_ROUTE, route),
    ApiTags(route.tag),
    route.auth === 'none' ? ApiOperation({ summary: route.summary, security: [] }) : ApiOperation({ summary: route.summary }),
    ...(route.auth === 'none' ? [] : [ApiBearerAuth(route.auth)]),
    ApiExtension('x-error-codes', codes),
    ...(route.body ? [ApiConsumes(route.body.contentType), ApiBody({ required: true, schema: route.body.schema })] : []),
    ApiResponse({ status: route.success.status, description: route.success.description, content }),
    ...[...errorResponses(codes)].map(([status, response]) => ApiResponse({ status, ...response })),
  );
}
