import { Controller, Get, Param } from '@nestjs/common';
import { ErrorCode } from '../errors';
import { ApiRoute } from '../openapi/api-route.decorator';
import { jsonAnswer, modelList, modelObject } from '../openapi/response-schemas';
import { CatalogService, ModelObject } from './catalog.service';

@Controller('v1/models')
export class ModelsController {
  constructor(private readonly catalog: CatalogService) {}

  @Get()
  @ApiRoute({
    tag: 'v1',
    summary: 'The model catalog (the same for every account); other methods answer 405',
    auth: 'api_key',
    errors: [ErrorCode.MethodNotAllowed],
    success: jsonAnswer(200, 'ListModelsResponse', modelList),
  })
  list() {
    return this.catalog.listing();
  }

  /**
   * Catalog ids may hold slashes (`org/model`): the id is the rest of the path, whether the client
   * percent-encoded its slashes (the Node SDK does) or not (the Python SDK does not).
   */
  @Get('*id')
  @ApiRoute({
    tag: 'v1',
    summary: "One model of the catalog; the id's slashes may be sent encoded or not; other methods answer 405",
    auth: 'api_key',
    errors: [ErrorCode.ModelNotFound, ErrorCode.MethodNotAllowed],
    success: jsonAnswer(200, 'Model', modelObject),
  })
  retrieve(@Param('id') segments: string[]): ModelObject {
    return this.catalog.model(segments.join('/'));
  }
}
