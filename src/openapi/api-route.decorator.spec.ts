import { Body, Controller, Get, Post } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { ApiProperty, DocumentBuilder, OpenAPIObject, OperationObject, SwaggerModule } from '@nestjs/swagger';
import { ErrorCode } from '../errors';
import { ApiRoute } from './api-route.decorator';
import { json, object, string } from './schemas';

class NameDto {
  @ApiProperty() name: string;
}

@Controller('things')
class ThingsController {
  @Get()
  @ApiRoute({ tag: 'operations', summary: 'Public', auth: 'none', errors: [], success: { status: 200, description: 'Up', content: json(object({ status: string })) } })
  open() {
    return {};
  }

  @Post()
  @ApiRoute({ tag: 'admin', summary: 'Create', auth: 'admin_token', errors: [ErrorCode.NotFound, ErrorCode.InvalidRequest], success: { status: 201, description: 'Made' } })
  create(@Body() body: NameDto) {
    return body;
  }

  @Post('raw')
  @ApiRoute({
    tag: 'v1',
    summary: 'Raw',
    auth: 'api_key',
    errors: [ErrorCode.InvalidJson],
    body: { contentType: 'application/json', schema: object({ model: string }, ['model'], true) },
    success: { status: 200, description: 'Text', content: { 'text/plain': string } },
  })
  raw(@Body() body: unknown) {
    return body;
  }
}

describe('ApiRoute', () => {
  let sut: OpenAPIObject;
  const operation = (path: string, method: 'get' | 'post') => sut.paths[path][method] as OperationObject & { 'x-error-codes': string[] };

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({ controllers: [ThingsController] }).compile();
    const app = moduleRef.createNestApplication(new FastifyAdapter(), { logger: false });
    await app.init();
    sut = SwaggerModule.createDocument(app, new DocumentBuilder().build(), { autoTagControllers: false });
    await app.close();
  });

  it('writes the summary, tag, security and x-error-codes of each route', () => {
    const open = operation('/things', 'get');
    expect([open.summary, open.tags, open.security, open['x-error-codes']]).toEqual(['Public', ['operations'], [], []]);
    const create = operation('/things', 'post');
    expect([create.tags, create.security]).toEqual([['admin'], [{ admin_token: [] }]]);
    expect(create['x-error-codes']).toEqual(['not_found', 'invalid_request_error', 'invalid_admin_token', 'rate_limit_exceeded', 'internal_error']);
  });

  it('puts each code under its status with an example, and the success body under its media types', () => {
    const create = operation('/things', 'post');
    expect(Object.keys(create.responses)).toEqual(['201', '400', '401', '404', '429', '500']);
    expect(create.responses['400']).toMatchObject({
      'x-error-codes': ['invalid_request_error'],
      content: { 'application/json': { examples: { invalid_request_error: { value: { error: { code: 'invalid_request_error', type: 'invalid_request_error', param: null } } } } } },
    });
    expect(create.requestBody).toMatchObject({ content: { 'application/json': { schema: { $ref: '#/components/schemas/NameDto' } } } });
    const raw = operation('/things/raw', 'post');
    expect(raw.responses['200']).toEqual({ description: 'Text', content: { 'text/plain': { schema: { type: 'string' } } } });
    expect(raw.requestBody).toEqual({ required: true, content: { 'application/json': { schema: object({ model: string }, ['model'], true) } } });
    expect(raw.security).toEqual([{ api_key: [] }]);
  });
});
