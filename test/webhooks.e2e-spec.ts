import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { PricedModel, withFakeProvider } from './support/chat-support';
import { FakeUpstream, startFakeUpstream } from './support/fake-upstream';
import { RawConfig, startTestApp, TestApp } from './support/test-app';
import { eventually, WebhookReceiver } from './support/webhook-receiver';

/**
 * Webhooks (issue 47, DESIGN.md 12.4): alerts written to the outbox in the settlement that crossed the threshold,
 * delivered at least once, signed, by any replica, each once per period and threshold. Real PostgreSQL, real
 * gateways on one database, a real HTTP receiver.
 */
jest.setTimeout(120_000);

const SECRET_ENV = 'WEBHOOKS_E2E_SECRET';
const SECRET = 'whsec-e2e-0123456789';
process.env[SECRET_ENV] = SECRET;

// 100 micro-USD per output token, free input: a request answered with 100 tokens costs 10,000 micro-USD ($0.01).
const MODEL: PricedModel = { id: 'webhook-chat', input: 0, output: 100, maxOutput: 4096 };
const EVENTS = ['budget.threshold', 'credits.low', 'key.expiring'];

describe('webhooks', () => {
  let fake: FakeUpstream;
  let receiver: WebhookReceiver;
  const apps: TestApp[] = [];

  function configFor(url: string, delivery: Record<string, unknown> = {}) {
    return (raw: RawConfig) => {
      withFakeProvider(fake.url, [MODEL])(raw);
      raw.webhooks = [{ url, secret_env: SECRET_ENV, events: EVENTS }];
      raw.webhook_delivery = { poll_interval_ms: 50, retry_base_ms: 50, timeout_ms: 2000, expiry_scan_interval_s: 1, ...delivery };
    };
  }

  async function startReplica(url = receiver.url, delivery: Record<string, unknown> = {}): Promise<TestApp> {
    const app = await startTestApp({ config: configFor(url, delivery) });
    apps.push(app);
    return app;
  }

  async function stopReplica(app: TestApp): Promise<void> {
    apps.splice(apps.indexOf(app), 1);
    await app.close();
  }

  const dbOf = (app: TestApp) => app.app.get(DataSource);

  /** Chat requests answered with 100 output tokens each, one after the other (each settles before the next). */
  async function spend(app: TestApp, key: string, requests: number): Promise<void> {
    for (let i = 0; i < requests; i++) await chat(app, key);
  }

  async function chat(app: TestApp, key: string): Promise<number> {
    const res = await fetch(`${app.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL.id, messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 }),
    });
    await res.text();
    return res.status;
  }

  /** Waits until the account holds nothing: its requests have settled. */
  async function settled(db: DataSource, accountId: string): Promise<void> {
    await eventually('settlements', async () => (await db.query(`SELECT count(*)::int AS n FROM holds WHERE account_id = $1`, [accountId]))[0].n === 0);
  }

  async function eventsOf(db: DataSource, subject: string): Promise<{ type: string; period: string; threshold: string }[]> {
    return db.query(`SELECT type, period, threshold::text AS threshold FROM webhook_events WHERE subject = $1 ORDER BY type, period, threshold`, [subject]);
  }

  /** Every delivery of the account's or key's events is done (delivered or failed). */
  async function allDone(db: DataSource, subjectLike: string): Promise<boolean> {
    const [row] = await db.query(
      `SELECT count(*) FILTER (WHERE d.status = 'pending')::int AS pending, count(e.id)::int AS events, count(d.id)::int AS deliveries
         FROM webhook_events e LEFT JOIN webhook_deliveries d ON d.event_id = e.id WHERE e.subject LIKE $1`,
      [subjectLike],
    );
    return row.events > 0 && row.pending === 0 && row.deliveries === row.events;
  }

  beforeAll(async () => {
    fake = await startFakeUpstream();
    fake.reply = { content: 'ok', promptTokens: 5, completionTokens: 100 };
    receiver = new WebhookReceiver(SECRET);
    await receiver.start();
  });
  beforeEach(() => {
    fake.resetState();
    fake.reply = { content: 'ok', promptTokens: 5, completionTokens: 100 };
  });
  afterAll(async () => {
    for (const app of apps.splice(0)) await app.close();
    await receiver?.stop();
    await fake?.close();
  });

  it('a receiver down while the threshold is crossed and while a replica restarts still gets each threshold once, signed', async () => {
    await receiver.stop();
    const first = await startReplica();
    const admin = new AdminClient(first.url);
    // $0.025: two requests of $0.01 reach 80%, a third takes what is left (its allowance capped to it): 100%.
    const { accountId, key, keyId } = await admin.createAccount({ creditsUsd: '1', monthlyLimitUsd: '0.025' });
    await spend(first, key, 2);
    await chat(first, key);
    await settled(dbOf(first), accountId);
    const [{ spend_micros }] = await dbOf(first).query(`SELECT spend_micros FROM monthly_counters WHERE account_id = $1`, [accountId]);
    const crossed = [50, 80, 100].filter((pct) => BigInt(spend_micros) * 100n >= 25_000n * BigInt(pct));
    expect(crossed).toEqual(expect.arrayContaining([50, 80]));
    const subject = `account:${accountId}`;
    expect((await eventsOf(dbOf(first), subject)).map((e) => e.threshold)).toEqual(crossed.map(String));

    // The attempts fail while the receiver is down, and are recorded.
    await eventually('a failed attempt', async () => {
      const rows = await dbOf(first).query(
        `SELECT d.attempts, d.last_error FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id WHERE e.subject = $1`,
        [subject],
      );
      return rows.length === crossed.length && rows.every((r: { attempts: number; last_error: string | null }) => r.attempts >= 1 && r.last_error !== null);
    });
    await stopReplica(first);

    // Another replica on the same database, then the receiver back.
    const second = await startReplica();
    await receiver.start();
    await eventually('the deliveries', () => allDone(dbOf(second), subject));
    const calls = receiver.of('budget.threshold', { account_id: accountId, scope: 'account' });
    expect(calls.map((c) => c.event.data.threshold_percent).sort((a, b) => a - b)).toEqual(crossed);
    expect(calls.every((c) => c.signed)).toBe(true);
    expect(calls[0].event).toMatchObject({ type: 'budget.threshold', created: expect.any(Number), data: { monthly_limit_usd: '0.025000', month: expect.stringMatching(/^\d{4}-\d{2}$/) } });
    expect(new Set(calls.map((c) => c.event.id)).size).toBe(calls.length);

    // More spending the same month writes nothing new: each threshold once per month.
    const secondAdmin = new AdminClient(second.url);
    await secondAdmin.request('PUT', `/accounts/${accountId}/spending-limit`, { monthly_limit_usd: '0.05' });
    await spend(second, key, 1);
    await settled(dbOf(second), accountId);
    expect((await eventsOf(dbOf(second), subject)).length).toBe(crossed.length);

    const listed = await secondAdmin.request('GET', '/webhooks/deliveries?limit=200&status=delivered');
    expect(listed.status).toBe(200);
    expect(listed.body.data.filter((d: { data: { account_id?: string } }) => d.data.account_id === accountId)).toHaveLength(crossed.length);
    expect(keyId).toBeDefined();
    await stopReplica(second);
  });

  it("concurrent settlements on two replicas crossing a key's thresholds write each event once, and two replicas deliver each once", async () => {
    const [a, b] = [await startReplica(), await startReplica()];
    const admin = new AdminClient(a.url);
    const { accountId } = await admin.createAccount({ creditsUsd: '10' });
    // A key limited to $0.10: 12 requests at once of $0.01 pass 50 and 80% (and 100% when all fit).
    const created = await admin.request('POST', `/accounts/${accountId}/keys`, { name: 'limited', monthly_limit_usd: '0.1' });
    const statuses = await Promise.all(Array.from({ length: 12 }, (_, i) => chat(i % 2 ? a : b, created.body.key)));
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(5);
    await settled(dbOf(a), accountId);

    const [{ budget_id }] = await dbOf(a).query(`SELECT budget_id FROM api_keys WHERE id = $1`, [created.body.id]);
    const subject = `key_budget:${budget_id}`;
    const events = await eventsOf(dbOf(a), subject);
    expect(events.map((e) => e.threshold)).toEqual(expect.arrayContaining(['50', '80']));
    expect(new Set(events.map((e) => e.threshold)).size).toBe(events.length);

    await eventually('the deliveries', () => allDone(dbOf(a), subject));
    const calls = receiver.of('budget.threshold', { key_id: created.body.id });
    expect(calls.map((c) => String(c.event.data.threshold_percent)).sort()).toEqual(events.map((e) => e.threshold).sort());
    expect(calls.every((c) => c.signed && c.event.data.scope === 'key' && c.event.data.account_id === accountId)).toBe(true);
    await stopReplica(a);
    await stopReplica(b);
  });

  it('key.expiring: keys expiring within 7 days are announced once each, with two replicas delivering at once', async () => {
    const [a, b] = [await startReplica(), await startReplica()];
    const admin = new AdminClient(a.url);
    const { accountId } = await admin.createAccount({ creditsUsd: '1' });
    receiver.delayMs = 100;
    try {
      const soon = new Date(Date.now() + 3 * 86_400_000).toISOString();
      const later = new Date(Date.now() + 30 * 86_400_000).toISOString();
      const expiring: string[] = [];
      for (let i = 0; i < 15; i++) expiring.push((await admin.request('POST', `/accounts/${accountId}/keys`, { name: `k${i}`, expires_at: soon })).body.id);
      const distant = (await admin.request('POST', `/accounts/${accountId}/keys`, { name: 'later', expires_at: later })).body.id;

      await eventually('the expiry announcements', async () => receiver.of('key.expiring', { account_id: accountId }).length >= expiring.length);
      await eventually('the deliveries', () => allDone(dbOf(a), 'key:%'));
      // Several scans later: still once each.
      await new Promise((r) => setTimeout(r, 2500));
      const calls = receiver.of('key.expiring', { account_id: accountId });
      expect(calls.map((c) => c.event.data.key_id).sort()).toEqual([...expiring].sort());
      expect(calls.every((c) => c.signed)).toBe(true);
      expect(calls.some((c) => c.event.data.key_id === distant)).toBe(false);
    } finally {
      receiver.delayMs = 0;
    }
    await stopReplica(a);
    await stopReplica(b);
  });

  it('credits.low: once per crossing below low_credits_usd, again after a top-up took the balance back above', async () => {
    const app = await startReplica();
    const admin = new AdminClient(app.url);
    const { accountId, key } = await admin.createAccount({ creditsUsd: '0.035' });
    const patched = await admin.request('PATCH', `/accounts/${accountId}`, { low_credits_usd: '0.02' });
    expect(patched.body.low_credits_usd).toBe('0.020000');

    await spend(app, key, 2); // $0.015 left: below
    await spend(app, key, 1); // still below: no second event
    await settled(dbOf(app), accountId);
    await eventually('the first alert', () => allDone(dbOf(app), `account:${accountId}`));
    expect(receiver.of('credits.low', { account_id: accountId })).toHaveLength(1);
    expect(receiver.of('credits.low', { account_id: accountId })[0].event.data).toMatchObject({ credits_usd: '0.015000', low_credits_usd: '0.020000' });

    await admin.addCredits(accountId, '0.02'); // $0.025: above again
    await spend(app, key, 1); // $0.015: a new crossing
    await settled(dbOf(app), accountId);
    await eventually('the second alert', async () => receiver.of('credits.low', { account_id: accountId }).length === 2);
    await eventually('the deliveries', () => allDone(dbOf(app), `account:${accountId}`));
    expect(receiver.of('credits.low', { account_id: accountId })).toHaveLength(2);
    expect(receiver.of('credits.low', { account_id: accountId }).every((c) => c.signed)).toBe(true);

    const cleared = await admin.request('PATCH', `/accounts/${accountId}`, { low_credits_usd: null });
    expect(cleared.body.low_credits_usd).toBeNull();
    await stopReplica(app);
  });

  it('a receiver that keeps failing is retried, then given up once the retry window is over, and listed as failed', async () => {
    const broken = new WebhookReceiver(SECRET);
    broken.status = 500;
    await broken.start();
    try {
      const app = await startReplica(broken.url, { retry_for_s: 1 });
      const admin = new AdminClient(app.url);
      const { accountId, key } = await admin.createAccount({ creditsUsd: '0.02' });
      await admin.request('PATCH', `/accounts/${accountId}`, { low_credits_usd: '0.015' });
      await spend(app, key, 1);
      await eventually('the delivery given up', async () => {
        const failed = await admin.request('GET', '/webhooks/deliveries?status=failed&limit=500');
        return failed.body.data.some((d: { data: { account_id?: string } }) => d.data.account_id === accountId);
      });
      const failed = (await admin.request('GET', '/webhooks/deliveries?status=failed&limit=500')).body.data.find((d: { data: { account_id?: string } }) => d.data.account_id === accountId);
      expect(failed).toMatchObject({ type: 'credits.low', url: broken.url, last_status: 500, last_error: 'HTTP 500', next_attempt_at: null });
      expect(failed.attempts).toBeGreaterThanOrEqual(2);
      await stopReplica(app);
    } finally {
      await broken.stop();
    }
  });
});
