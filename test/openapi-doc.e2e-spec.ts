import SwaggerParser from '@apidevtools/swagger-parser';
import { RequestMethod, Type } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { MetadataScanner, ModulesContainer } from '@nestjs/core';
import { DECORATORS } from '@nestjs/swagger';
import { parse } from 'yaml';
import { describeErrorCode, ErrorCode } from '../src/errors';
import { API_ROUTE } from '../src/openapi/api-route.decorator';
import { AdminClient } from './support/admin-client';
import { startTestApp, TestApp } from './support/test-app';
import type { RouteOptions } from 'fastify';

/** Routes of DESIGN.md that must be documented whatever else is registered. */
const REQUIRED = [
  'POST /v1/chat/completions',
  'GET /v1/models',
  'GET /v1/usage',
  'POST /admin/v1/accounts',
  'GET /admin/v1/accounts/{id}',
  'POST /admin/v1/accounts/{id}/keys',
  'GET /admin/v1/accounts/{id}/keys',
  'DELETE /admin/v1/keys/{id}',
  'POST /admin/v1/accounts/{id}/credits',
  'PUT /admin/v1/accounts/{id}/spending-limit',
  'PUT /admin/v1/accounts/{id}/subscription',
  'GET /admin/v1/accounts/{id}/usage',
  'GET /metrics',
];

/** "/v1/models/:id" as OpenAPI writes it: "/v1/models/{id}"; the rest of the path ("*") is the model's id. */
const openApiPath = (path: string) => path.replace(/:(\w+)/g, '{$1}').replace(/\/\*$/, '/{id}');

/** Every "METHOD /path" the app's Fastify router serves, in OpenAPI notation, as its onRoute hook saw them. */
function servedRoutes(routes: RouteOptions[]): string[] {
  return (
    routes
      // Fastify answers HEAD for every GET route by itself (as Express did): not a route of ours.
      .flatMap((route) => [route.method].flat().filter((method) => method !== 'HEAD').map((method) => `${method} ${openApiPath(route.url)}`))
      // Swagger UI and its document are served by SwaggerModule, not by a controller.
      .filter((route) => !/ \/docs(\/|$)/.test(route))
  );
}

interface Handler {
  route: string;
  documented: boolean;
  excluded: boolean;
}

/** Every handler of every controller, read from Nest's route metadata: whether it carries @ApiRoute or is excluded. */
function controllerHandlers(gw: TestApp): Handler[] {
  const scanner = new MetadataScanner();
  const controllers = [...gw.app.get(ModulesContainer).values()].flatMap((m) => [...m.controllers.values()]);
  return controllers.flatMap(({ metatype }) => {
    if (!metatype) return [];
    const prototype = (metatype as Type).prototype;
    const base: string = Reflect.getMetadata(PATH_METADATA, metatype);
    return scanner.getAllMethodNames(prototype).flatMap((name) => {
      const handler = prototype[name];
      const path: string | undefined = Reflect.getMetadata(PATH_METADATA, handler);
      if (path === undefined) return [];
      const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod];
      const full = `/${[base, path].join('/')}`.replace(/\/+/g, '/').replace(/(.)\/$/, '$1');
      return [{
        route: `${method} ${openApiPath(full)}`,
        documented: Reflect.getMetadata(API_ROUTE, handler) !== undefined,
        excluded: Reflect.getMetadata(DECORATORS.API_EXCLUDE_ENDPOINT, handler)?.disable === true,
      }];
    });
  });
}

describe('OpenAPI document at /docs', () => {
  let gw: TestApp;
  const routes: RouteOptions[] = [];
  let doc: any;
  /** The document with every $ref replaced by what it points to. */
  let resolved: any;

  beforeAll(async () => {
    gw = await startTestApp({ beforeListen: (app) => app.getHttpAdapter().getInstance().addHook('onRoute', (route: RouteOptions) => void routes.push(route)) });
    const res = await fetch(`${gw.url}/docs/openapi.json`);
    expect(res.status).toBe(200);
    doc = await res.json();
    resolved = await SwaggerParser.dereference(structuredClone(doc));
  });
  afterAll(() => gw.close());

  const operations = () =>
    Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item as Record<string, any>).map(([method, op]) => ({ route: `${method.toUpperCase()} ${path}`, op })),
    );

  it('is a valid OpenAPI 3 document (and the same as YAML)', async () => {
    expect(doc.openapi).toMatch(/^3\./);
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeTruthy();
    const yaml = await fetch(`${gw.url}/docs/openapi.yaml`);
    expect(yaml.status).toBe(200);
    expect(parse(await yaml.text())).toEqual(doc);
  });

  it('lists every route the gateway serves, each with its summary, security and error codes', () => {
    const documented = operations().map((o) => o.route);
    const handlers = controllerHandlers(gw);
    // A handler without @ApiRoute fails here, unless it is a page excluded from the API (the dashboard's HTML).
    expect(handlers.filter((h) => !h.documented && !h.excluded).map((h) => h.route)).toEqual([]);
    expect(handlers.filter((h) => h.excluded).map((h) => h.route).sort()).toEqual(['GET /dashboard', 'GET /dashboard/assets/{file}']);
    expect([...new Set(servedRoutes(routes))].sort()).toEqual(handlers.map((h) => h.route).sort());
    expect(documented.sort()).toEqual(handlers.filter((h) => h.documented).map((h) => h.route).sort());
    for (const route of REQUIRED) expect(documented).toContain(route);

    for (const { route, op } of operations()) {
      // A route without @ApiRoute (src/openapi/api-route.decorator.ts) has neither.
      expect([route, typeof op.summary, Array.isArray(op['x-error-codes'])]).toEqual([route, 'string', true]);
      if (route.includes('/v1/')) {
        const scheme = route.includes('/admin/') ? 'admin_token' : 'api_key';
        expect([route, op.security]).toEqual([route, [{ [scheme]: [] }]]);
        expect(op['x-error-codes']).toContain(scheme === 'api_key' ? 'invalid_api_key' : 'invalid_admin_token');
        if (scheme === 'admin_token') expect([route, op['x-error-codes']]).toEqual([route, expect.arrayContaining(['rate_limit_exceeded'])]);
      }
      // Each code sits under its status, with an example body carrying that code and its type.
      for (const code of op['x-error-codes'] as ErrorCode[]) {
        const { status, type } = describeErrorCode(code);
        const response = op.responses[String(status)];
        expect([route, code, response?.['x-error-codes']]).toEqual([route, code, expect.arrayContaining([code])]);
        const example = response.content['application/json'].examples[code].value;
        expect(example.error).toMatchObject({ code, type, param: null });
      }
    }
  });

  it("documents the chat, models and admin routes' own codes, bodies and media types", () => {
    const op = (route: string) => operations().find((o) => o.route === route)!.op;
    const chat = op('POST /v1/chat/completions');
    expect(chat.responses['402']['x-error-codes']).toEqual(['insufficient_credits', 'monthly_limit_reached', 'key_limit_reached']);
    expect(chat.responses['400']['x-error-codes']).toEqual(
      expect.arrayContaining(['invalid_json', 'missing_model', 'unknown_model', 'model_not_hosted', 'invalid_request_error']),
    );
    expect(chat.responses['429']['x-error-codes']).toEqual(['rate_limit_exceeded']);
    expect(chat.responses['502']['x-error-codes']).toEqual(['upstream_error']);
    // Every deployment of the model out (circuit open): 503 with Retry-After; an unreachable engine: 504.
    expect(chat.responses['503']['x-error-codes']).toEqual(['upstream_unavailable']);
    expect(op('POST /v1/responses').responses['503']['x-error-codes']).toEqual(['upstream_unavailable']);
    expect(Object.keys(chat.responses['200'].content)).toEqual(['application/json', 'text/event-stream']);
    expect(chat.requestBody.content['application/json'].schema.required).toEqual(['model', 'messages']);
    expect(op('GET /v1/models').responses['405']['x-error-codes']).toEqual(['method_not_allowed']);
    expect(op('GET /admin/v1/accounts/{id}').responses['404']['x-error-codes']).toEqual(['not_found']);
    const body = (route: string) => {
      const [method, path] = route.split(' ');
      return resolved.paths[path][method.toLowerCase()].requestBody.content['application/json'].schema;
    };
    expect(body('POST /admin/v1/accounts/{id}/credits').required).toEqual(['amount_usd']);
    expect(op('GET /v1/usage').parameters.map((p: any) => p.name)).toEqual(['from', 'to']);
    expect(doc.components.schemas.ErrorResponse.properties.error.properties.code.enum).toEqual(Object.values(ErrorCode));
  });

  it('documents every field of the usage answers (their schemas allow no other)', async () => {
    const admin = new AdminClient(gw.url);
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const documented = (route: string) => {
      const [method, path] = route.split(' ');
      return Object.keys(resolved.paths[path][method.toLowerCase()].responses['200'].content['application/json'].schema.properties).sort();
    };
    // A chat request, so that every list has a row whose fields can be compared.
    expect((await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'dev-echo', messages: [{ role: 'user', content: 'hi' }] }),
    })).status).toBe(200);
    // Its record is written just after the answer.
    for (let tries = 0; (await admin.usage(accountId)).latest.length === 0 && tries < 100; tries++) await new Promise((resolve) => setTimeout(resolve, 20));
    const own = (await (await fetch(`${gw.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })).json()) as Record<string, any>;
    expect(Object.keys(own).sort()).toEqual(documented('GET /v1/usage'));
    const byAdmin = (await admin.usage(accountId)) as Record<string, any>;
    expect(Object.keys(byAdmin).sort()).toEqual(documented('GET /admin/v1/accounts/{id}/usage'));

    // And the fields of each part, the token classes among them (DESIGN.md section 10).
    const schema = (route: string) => {
      const [method, path] = route.split(' ');
      return resolved.paths[path][method.toLowerCase()].responses['200'].content['application/json'].schema.properties;
    };
    const fields = (part: any) => Object.keys(part.type === 'array' ? part.items.properties : part.properties).sort();
    for (const [route, answer] of [['GET /v1/usage', own], ['GET /admin/v1/accounts/{id}/usage', byAdmin]] as const) {
      const parts = schema(route);
      for (const part of ['totals', 'by_key', 'by_model', 'daily', 'latest', 'by_endpoint', ...(answer.by_deployment ? ['by_deployment'] : [])]) {
        const shown = Array.isArray(answer[part]) ? answer[part][0] : answer[part];
        expect([route, part, Object.keys(shown).sort()]).toEqual([route, part, fields(parts[part])]);
      }
      expect(fields(parts.by_model)).toEqual(expect.arrayContaining(['cached_tokens', 'cache_write_tokens', 'reasoning_tokens', 'audio_input_tokens', 'audio_output_tokens']));
    }
  });

  it('serves Swagger UI from the gateway itself, without a CDN and without a key', async () => {
    const page = await fetch(`${gw.url}/docs`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('swagger-ui');
    expect(html).not.toMatch(/(src|href)="https?:\/\//);
    const css = await fetch(`${gw.url}/docs/swagger-ui.css`);
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toMatch(/text\/css/);
  });
});
