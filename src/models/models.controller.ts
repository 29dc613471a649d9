import { Controller, Get, Headers, Param, Query, Req } from '@nestjs/common';
import { ApiHeader, ApiQuery } from '@nestjs/swagger';
import type { IncomingHttpHeaders } from 'node:http';
import { GatewayRequest } from '../common/http/gateway-request';
import { pathOf } from '../common/http/url-path';
import { asksForAnthropic, ErrorCode } from '../errors';
import { AcceptsXApiKey } from '../keys/x-api-key.decorator';
import { ApiRoute } from '../openapi/api-route.decorator';
import { anthropicModelInfoSchema, anthropicModelListSchema, modelList, modelObject } from '../openapi/response-schemas';
import { json } from '../openapi/schemas';
import { AnthropicModelInfo, AnthropicModelList, anthropicPageQuery } from './anthropic-models';
import { CatalogService, ModelObject } from './catalog.service';

const ANTHROPIC_VERSION = ApiHeader({
  name: 'anthropic-version',
  required: false,
  description: "Sent by Anthropic's SDKs (any value): the answer, and its errors, take Anthropic's shapes",
});

/**
 * The catalog for both dialects: OpenAI's shapes, or Anthropic's (chat models only) for a request that carries
 * `anthropic-version`, as Anthropic's SDKs and Claude Code send it. The key may come as x-api-key.
 */
@Controller('v1/models')
@AcceptsXApiKey()
export class ModelsController {
  constructor(private readonly catalog: CatalogService) {}

  @Get()
  @ApiRoute({
    tag: 'v1',
    summary: "The model catalog (the same for every account; aliases are not listed); with anthropic-version, Anthropic's page of the chat models. Key as Bearer or x-api-key; other methods answer 405",
    auth: 'api_key',
    errors: [ErrorCode.InvalidRequest, ErrorCode.MethodNotAllowed],
    success: {
      status: 200,
      description: "OpenAI's list; with anthropic-version, Anthropic's page {data, has_more, first_id, last_id}",
      content: json({ oneOf: [modelList, anthropicModelListSchema] }),
    },
  })
  @ANTHROPIC_VERSION
  @ApiQuery({ name: 'limit', required: false, schema: { type: 'integer', minimum: 1, maximum: 1000, default: 20 }, description: 'With anthropic-version: models per page' })
  @ApiQuery({ name: 'after_id', required: false, schema: { type: 'string' }, description: 'With anthropic-version: the page after this model' })
  @ApiQuery({ name: 'before_id', required: false, schema: { type: 'string' }, description: 'With anthropic-version: the page before this model' })
  list(@Headers() headers: IncomingHttpHeaders, @Query() query: Record<string, unknown>): { object: 'list'; data: ModelObject[] } | AnthropicModelList {
    return asksForAnthropic(headers) ? this.catalog.anthropicListing(anthropicPageQuery(query)) : this.catalog.listing();
  }

  /**
   * Catalog ids may hold slashes (`org/model`): the id is the rest of the path, whether the client
   * percent-encoded its slashes (the Node SDK does) or not (the Python SDK does not).
   */
  @Get('*')
  @ApiRoute({
    tag: 'v1',
    summary: "One model of the catalog, by id or alias (answered under the name asked for); with anthropic-version, a chat model in Anthropic's shape. The id's slashes may be sent encoded or not; other methods answer 405",
    auth: 'api_key',
    errors: [ErrorCode.ModelNotFound, ErrorCode.MethodNotAllowed],
    success: {
      status: 200,
      description: "OpenAI's Model; with anthropic-version, Anthropic's ModelInfo",
      content: json({ oneOf: [modelObject, anthropicModelInfoSchema] }),
    },
  })
  @ANTHROPIC_VERSION
  retrieve(@Param('*') rest: string, @Req() req: GatewayRequest, @Headers() headers: IncomingHttpHeaders): ModelObject | AnthropicModelInfo {
    // The router takes a trailing slash off (routerOptions.ignoreTrailingSlash); here it is part of the id.
    const name = pathOf(req.url).endsWith('/') ? `${rest}/` : rest;
    return asksForAnthropic(headers) ? this.catalog.anthropicModel(name) : this.catalog.model(name);
  }
}
