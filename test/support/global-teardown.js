const { Client } = require('pg');

module.exports = async function globalTeardown() {
  const db = globalThis.__GATEWAY_TEST_DB__;
  if (db && !process.env.KEEP_TEST_DB) {
    const admin = new Client({ connectionString: db.serverUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${db.name}" WITH (FORCE)`);
    await admin.end();
  }
  await globalThis.__GATEWAY_EMBEDDED_PG__?.stop();
};
