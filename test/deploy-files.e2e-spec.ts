import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { parse } from 'yaml';
import { testDatabaseUrl } from './support/test-app';

// No Docker engine runs here (nor in CI): the files are checked with parsers, and the migration
// command that compose runs once is run for real against a fresh database.
const ROOT = join(__dirname, '..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
const run = promisify(execFile);

describe('docker-compose.yml', () => {
  const compose = parse(read('docker-compose.yml'));
  const services = compose.services;

  it('has postgres (pg_isready healthcheck), redis, a one-shot migrate job, the gateway and a proxy', () => {
    expect(Object.keys(services).sort()).toEqual(['gateway', 'migrate', 'postgres', 'proxy', 'redis']);
    expect(services.postgres.image).toMatch(/^postgres:/);
    expect(services.postgres.healthcheck.test.join(' ')).toContain('pg_isready');
    expect(services.postgres.volumes).toContain('pgdata:/var/lib/postgresql/data');
    expect(Object.keys(compose.volumes)).toContain('pgdata');
    expect(services.redis.image).toMatch(/^redis:/);
    expect(services.redis.healthcheck.test).toContain('ping');
  });

  it('runs the gateway at three replicas that wait for healthy PostgreSQL and Redis and for the migrations', () => {
    const gateway = services.gateway;
    expect(gateway.deploy.replicas).toBe(3);
    expect(gateway.depends_on).toEqual({
      postgres: { condition: 'service_healthy' },
      redis: { condition: 'service_healthy' },
      migrate: { condition: 'service_completed_successfully' },
    });
    // Replicas cannot share a host port: only the proxy publishes one.
    expect(gateway.ports).toBeUndefined();
    expect(services.proxy.ports).toEqual(['${GATEWAY_PORT:-8080}:80']);
    expect(gateway.environment.DATABASE_URL).toMatch(/^postgres:\/\/[^@]+@postgres:5432\//);
    expect(gateway.environment.REDIS_URL).toBe('redis://redis:6379');
    expect(gateway.environment.ADMIN_TOKEN).toMatch(/^\$\{ADMIN_TOKEN:\?/);
    // nginx appends the client's address to X-Forwarded-For: one trusted hop, no more.
    expect(gateway.environment.TRUST_PROXY_HOPS).toBe('1');
    expect(gateway.build).toBe('.');
    expect(gateway.stop_grace_period).toBeDefined();
  });

  it('runs migrations once, before the replicas, from the same image', () => {
    const migrate = services.migrate;
    expect(migrate.image).toBe(services.gateway.image);
    expect(migrate.command).toEqual(['node', 'node_modules/typeorm/cli.js', 'migration:run', '-d', 'dist/ormconfig.js']);
    expect(migrate.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    expect(migrate.environment.DATABASE_URL).toBe(services.gateway.environment.DATABASE_URL);
    expect(migrate.restart).toBe('no');
    // dist/ormconfig.js is what `nest build` makes of ormconfig.ts.
    expect(JSON.parse(read('tsconfig.build.json')).include).toContain('ormconfig.ts');
  });

  it('puts nginx in front with the repository config mounted', () => {
    expect(services.proxy.image).toMatch(/^nginx:/);
    expect(services.proxy.volumes).toEqual(['./deploy/nginx.conf:/etc/nginx/nginx.conf:ro']);
    expect(services.proxy.depends_on).toEqual({ gateway: { condition: 'service_healthy' } });
    for (const volume of [...services.proxy.volumes, ...services.gateway.volumes]) {
      expect(existsSync(join(ROOT, volume.split(':')[0]))).toBe(true);
    }
  });
});

describe('deploy/nginx.conf', () => {
  const conf = read('deploy/nginx.conf');
  const directives = conf
    .split('\n')
    .map((line) => line.replace(/#.*/, '').trim())
    .filter(Boolean);

  it('streams SSE and uploads without buffering, to every replica', () => {
    for (const directive of [
      'proxy_pass http://gateway;',
      'proxy_http_version 1.1;',
      'proxy_set_header Connection "";',
      'proxy_buffering off;',
      'proxy_cache off;',
      'proxy_request_buffering off;',
      'gzip off;',
      'server gateway:8080 resolve;',
    ]) {
      expect(directives).toContain(directive);
    }
    expect(directives.some((d) => /^proxy_read_timeout \d+s;$/.test(d))).toBe(true);
    expect(directives).not.toContainEqual(expect.stringContaining('non_idempotent'));
  });

  it('has balanced braces and ends every simple directive with a semicolon', () => {
    let depth = 0;
    for (const d of directives) {
      depth += (d.match(/\{/g) ?? []).length - (d.match(/\}/g) ?? []).length;
      expect(depth).toBeGreaterThanOrEqual(0);
      if (!d.endsWith('{') && d !== '}') expect([d, d.endsWith(';')]).toEqual([d, true]);
    }
    expect(depth).toBe(0);
  });
});

describe('Dockerfile', () => {
  const lines = read('Dockerfile')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const stages = lines.filter((l) => l.startsWith('FROM '));

  it('is a multi-stage build on Debian, on the active LTS of Node.js (26)', () => {
    expect(stages).toEqual(['FROM node:26-bookworm-slim AS build', 'FROM node:26-bookworm-slim AS runtime']);
    const runtime = lines.slice(lines.indexOf(stages[1]));
    expect(runtime.filter((l) => l.startsWith('COPY --from=build')).length).toBeGreaterThanOrEqual(3);
    expect(runtime).toContain('USER node');
    // The container starts the gateway exactly as `npm start` does (same node flags); npm's shell `exec`s node
    // so that signals reach it, and in the image tini passes them to node.
    const start = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.start as string;
    expect(start).toMatch(/^exec node /);
    expect(runtime[runtime.length - 1]).toBe(`CMD ${JSON.stringify(start.replace(/^exec /, '').split(' '))}`.replace(/","/g, '", "'));
    expect(runtime).toContain('ENTRYPOINT ["/usr/bin/tini", "--"]');
    expect(existsSync(join(ROOT, 'src/main.ts'))).toBe(true);
  });

  it('installs the audio engines in the runtime stage', () => {
    const runtime = lines.slice(lines.indexOf(stages[1]));
    const apt = runtime.find((l) => l.startsWith('RUN apt-get update'))!;
    for (const pkg of ['ffmpeg', 'espeak-ng', 'pocketsphinx', 'pocketsphinx-en-us']) expect(apt.split(/\s+/)).toContain(pkg);
    expect(apt).toContain('rm -rf /var/lib/apt/lists/*');
  });

  it('copies only files that exist, and keeps local state out of the build context', () => {
    const sources = lines
      .filter((l) => l.startsWith('COPY ') && !l.includes('--from='))
      .flatMap((l) => l.split(/\s+/).slice(1, -1).filter((word) => !word.startsWith('--')));
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) expect([source, existsSync(join(ROOT, source))]).toEqual([source, true]);
    const ignored = read('.dockerignore').split('\n');
    for (const entry of ['node_modules', 'dist', '.data']) expect(ignored).toContain(entry);
  });
});

describe('the migration command of the migrate job', () => {
  let server: Client;
  let url: URL;
  const name = `gateway_deploy_${Date.now()}`;

  beforeAll(async () => {
    url = new URL(testDatabaseUrl());
    server = new Client({ connectionString: url.toString() });
    await server.connect();
    await server.query(`CREATE DATABASE "${name}"`);
    url.pathname = `/${name}`;
  });
  afterAll(async () => {
    await server.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await server.end();
  });

  const migrate = () =>
    run('npm', ['run', '-s', 'migration:run'], { cwd: ROOT, env: { ...process.env, DATABASE_URL: url.toString() } });

  it('applies every migration to an empty database, and a second run finds nothing to do', async () => {
    const first = await migrate();
    expect(first.stdout).toMatch(/Migration \w+ has been executed successfully/);
    const db = new Client({ connectionString: url.toString() });
    await db.connect();
    try {
      const { rows } = await db.query(`SELECT name FROM migrations ORDER BY id`);
      expect(rows.length).toBeGreaterThan(0);
      const tables = await db.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`);
      expect(tables.rows.map((r) => r.table_name)).toEqual(expect.arrayContaining(['accounts', 'holds', 'usage_records']));
    } finally {
      await db.end();
    }
    const second = await migrate();
    expect(second.stdout).toContain('No migrations are pending');
  });
});
