import 'reflect-metadata';
import { StartupError } from '../startup/startup-error';
import { explainStartFailure } from './embedded-postgres-failure';

// What PostgreSQL 17 prints on stderr in each case (copied from real runs).
const LOCKED = `2026-11-24 21:41:41.539 UTC [13528] FATAL:  lock file "postmaster.pid" already exists
2026-11-24 21:41:41.539 UTC [13528] HINT:  Is another postmaster (PID 12641) running in data directory "/srv/pg"?`;
const PORT_TAKEN = `2026-11-24 21:41:41.842 UTC [13532] LOG:  could not bind IPv4 address "127.0.0.1": Address already in use
2026-11-24 21:41:41.842 UTC [13532] HINT:  Is another postmaster already running on port 54329? If not, wait a few seconds and retry.
2026-11-24 21:41:41.842 UTC [13532] WARNING:  could not create listen socket for "127.0.0.1"
2026-11-24 21:41:41.842 UTC [13532] FATAL:  could not create any TCP/IP sockets`;
const UNREADABLE = `2026-11-24 21:41:46.419 GMT [13655] LOG:  could not open configuration file "/srv/pg/postgresql.conf": Permission denied
2026-11-24 21:41:46.419 GMT [13655] FATAL:  configuration file "/srv/pg/postgresql.conf" contains errors`;

describe(explainStartFailure.name, () => {
  const place = { dataDir: '/srv/pg', port: 54329, portFromEnv: false };

  it('a data directory locked by a running PostgreSQL: names EMBEDDED_PG_DIR, the PID and a way to run beside it', async () => {
    const sut = await explainStartFailure(LOCKED, place);
    expect(sut).toBeInstanceOf(StartupError);
    expect(sut.message).toMatch(/^EMBEDDED_PG_DIR \/srv\/pg is in use by another running PostgreSQL \(PID 12641\)/);
    expect(sut.message).toMatch(/\(kill 12641\)/);
    expect(sut.message).toMatch(/EMBEDDED_PG_DIR=\.data\/pg-2 EMBEDDED_PG_PORT=\d+ npm start$/);
  });

  it('the default port taken: says it is the default and how to pick another; a chosen port: names EMBEDDED_PG_PORT', async () => {
    const byDefault = await explainStartFailure(PORT_TAKEN, place);
    expect(byDefault.message).toMatch(/^Port 54329, the embedded PostgreSQL's default, is already in use by another program/);
    expect(byDefault.message).toMatch(/Pick a free port with EMBEDDED_PG_PORT, e\.g\. EMBEDDED_PG_PORT=(\d+) npm start$/);
    expect(Number(/EMBEDDED_PG_PORT=(\d+)/.exec(byDefault.message)![1])).toBeGreaterThan(54329);

    const chosen = await explainStartFailure(PORT_TAKEN, { ...place, port: 6000, portFromEnv: true });
    expect(chosen.message).toMatch(/^Port 6000 \(EMBEDDED_PG_PORT\) is already in use/);
  });

  it("anything else: PostgreSQL's own FATAL line, with both variables", async () => {
    const sut = await explainStartFailure(UNREADABLE, place);
    expect(sut.message).toBe(
      'The embedded PostgreSQL (EMBEDDED_PG_DIR /srv/pg, EMBEDDED_PG_PORT 54329) stopped while starting: ' +
        'FATAL: configuration file "/srv/pg/postgresql.conf" contains errors. ' +
        'Fix the directory or choose another with EMBEDDED_PG_DIR, or set DATABASE_URL to a PostgreSQL of your own.',
    );
    expect((await explainStartFailure('', place)).message).toMatch(/stopped while starting without saying why\./);
  });
});
