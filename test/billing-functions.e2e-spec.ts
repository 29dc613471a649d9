import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../src/database/data-source.options';
import { sqlFunctionFiles } from '../src/database/functions/sql-functions';
import { MIGRATIONS } from '../src/database/migrations';
import { BillingFunctionFiles1763930000000 } from '../src/database/migrations/1763930000000-BillingFunctionFiles';

/** A migration that installs src/database/functions: the digest of the files it installs, and (after the first) the definitions its down restores. */
type FunctionInstaller = (typeof MIGRATIONS)[number] & { functionFilesSha256: string; previousFunctions?: readonly string[] };
const isInstaller = (m: (typeof MIGRATIONS)[number]): m is FunctionInstaller => 'functionFilesSha256' in m;
import { testDatabaseUrl } from './support/test-app';

/** Each billing_* function of `schema` by name and arguments: its definition as PostgreSQL prints it, without the schema. */
async function definitions(db: Client, schema: string): Promise<Record<string, string>> {
  const { rows } = await db.query<{ signature: string; definition: string }>(
    `SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')' AS signature, pg_get_functiondef(p.oid) AS definition
       FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = $1 AND p.proname LIKE 'billing\\_%'`,
    [schema],
  );
  return Object.fromEntries(rows.map((r) => [r.signature, r.definition.replace(`FUNCTION ${schema}.`, 'FUNCTION ')]));
}

/** What `statements` (CREATE FUNCTION ones; default: src/database/functions/*.sql) define, installed in a schema of their own inside a transaction that is rolled back. */
async function fileDefinitions(db: Client, statements: readonly string[] = sqlFunctionFiles().map((file) => file.sql)): Promise<Record<string, string>> {
  await db.query('BEGIN');
  try {
    await db.query('CREATE SCHEMA function_files');
    await db.query('SET LOCAL search_path = function_files, public');
    for (const sql of statements) await db.query(sql);
    return await definitions(db, 'function_files');
  } finally {
    await db.query('ROLLBACK');
  }
}

const names = (defined: Record<string, string>) => Object.keys(defined).map((signature) => signature.slice(0, signature.indexOf('('))).sort();

/**
 * src/database/functions holds the current text of every SQL function: a fresh database migrated to the
 * latest migration has exactly those functions, as the files define them, and no other billing_* one;
 * the last migration's down gives back the functions the earlier migrations had left.
 */
describe('SQL functions: the files are what the migrations install', () => {
  const name = `gateway_functions_${Date.now()}_${process.pid}`;
  let server: Client;
  let db: Client;
  let url: string;

  const migrator = (migrations: typeof MIGRATIONS) =>
    new DataSource({ ...dataSourceOptions(url), migrations, migrationsRun: false, extra: { max: 1 } }).initialize();
  async function withMigrator(migrations: typeof MIGRATIONS, work: (source: DataSource) => Promise<unknown>): Promise<void> {
    const source = await migrator(migrations);
    try {
      await work(source);
    } finally {
      await source.destroy();
    }
  }

  beforeAll(async () => {
    server = new Client({ connectionString: testDatabaseUrl() });
    await server.connect();
    await server.query(`CREATE DATABASE "${name}"`);
    const target = new URL(testDatabaseUrl());
    target.pathname = `/${name}`;
    url = target.toString();
    db = new Client({ connectionString: url });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    await server?.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await server?.end();
  });

  it('installs exactly the functions of the files, drops billing_reserve, and the downs restore the previous definitions', async () => {
    // Up to the first migration that installs the files, then all of them.
    const firstInstallerAt = MIGRATIONS.indexOf(BillingFunctionFiles1763930000000);
    const latestInstaller = [...MIGRATIONS].reverse().find(isInstaller)!;
    await withMigrator(MIGRATIONS.slice(0, firstInstallerAt), (source) => source.runMigrations({ transaction: 'all' }));
    const before = await definitions(db, 'public');
    expect(names(before)).toContain('billing_reserve');

    await withMigrator(MIGRATIONS, (source) => source.runMigrations({ transaction: 'all' }));
    const files = await fileDefinitions(db);
    // One file per function, named after it.
    expect(names(files)).toEqual(sqlFunctionFiles().map((file) => file.name));
    expect(await definitions(db, 'public')).toEqual(files);
    expect(names(files)).not.toContain('billing_reserve');

    // Down to before the latest installer: the functions it changed are back as they were, the others as the files have them.
    const undo = async (count: number) => {
      for (let i = 0; i < count; i++) await withMigrator(MIGRATIONS, (source) => source.undoLastMigration({ transaction: 'all' }));
    };
    await undo(MIGRATIONS.length - MIGRATIONS.indexOf(latestInstaller));
    if (latestInstaller !== BillingFunctionFiles1763930000000) {
      const previous = await fileDefinitions(db, latestInstaller.previousFunctions ?? []);
      const unchanged = Object.fromEntries(Object.entries(files).filter(([signature]) => !names(previous).includes(signature.slice(0, signature.indexOf('(')))));
      expect(await definitions(db, 'public')).toEqual({ ...unchanged, ...previous });
    }
    // Down to before the first installer: the functions of the migrations before it.
    await undo(MIGRATIONS.indexOf(latestInstaller) - firstInstallerAt);
    expect(await definitions(db, 'public')).toEqual(before);

    await withMigrator(MIGRATIONS, (source) => source.runMigrations({ transaction: 'all' }));
    expect(await definitions(db, 'public')).toEqual(files);
  });

  it('has a migration that installs the files as they are now (a database migrated already runs only new migrations)', () => {
    const digest = createHash('sha256');
    for (const file of sqlFunctionFiles()) digest.update(`${file.name}\0${file.sql}\0`);
    const installer = [...MIGRATIONS].reverse().find(isInstaller);
    // Changed a function file? Add a migration that installs the files again (sqlFunctionFiles) and give it this digest.
    expect(installer?.functionFilesSha256).toBe(digest.digest('hex'));
  });

  it('leaves no function that nothing calls: each one is called by the billing repository or by another function', () => {
    const files = sqlFunctionFiles();
    const repository = readFileSync(join(__dirname, '../src/billing/billing-repository.ts'), 'utf8');
    for (const { name: fn } of files) {
      const calls = new RegExp(`\\b${fn}\\(`);
      const called = calls.test(repository) || files.some((other) => other.name !== fn && calls.test(other.sql));
      expect({ fn, called }).toEqual({ fn, called: true });
    }
  });
});
