/* Creates the throwaway database of this test run: a fresh database on DATABASE_URL's server when
 * it is set, otherwise on an embedded PostgreSQL, so `npm test` works on a machine without one. */
require('reflect-metadata');
require('ts-node').register({ transpileOnly: true, compilerOptions: { module: 'commonjs' } });
const { spawnSync } = require('node:child_process');
const { join } = require('node:path');
const { Client } = require('pg');
const { startEmbeddedPostgres } = require('../../src/database/embedded-postgres');

const TEST_EMBEDDED_PORT = Number(process.env.TEST_EMBEDDED_PG_PORT || 54339);

/** dist/ as `npm start` builds it, rebuilt only when src/ changed: the gateway processes tests start run it (test/support/built-gateway.ts). */
function buildGateway() {
  const build = spawnSync(process.execPath, [join(__dirname, '../../scripts/build.mjs'), '--if-changed'], { stdio: 'inherit' });
  if (build.status !== 0) throw new Error(`the gateway's build (scripts/build.mjs) failed: exit ${build.status ?? build.signal}`);
}

module.exports = async function globalSetup() {
  buildGateway();
  let serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    const embedded = await startEmbeddedPostgres({ dataDir: '.data/test-pg', port: TEST_EMBEDDED_PORT, database: 'postgres' });
    globalThis.__GATEWAY_EMBEDDED_PG__ = embedded;
    serverUrl = embedded.url;
  }
  const name = `gateway_test_${Date.now()}_${process.pid}`;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  process.env.TEST_DATABASE_URL = url.toString();
  globalThis.__GATEWAY_TEST_DB__ = { serverUrl, name };
};
