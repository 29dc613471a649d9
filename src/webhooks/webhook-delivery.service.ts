import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { GatewayConfig } from '../config/gateway-config.schema';
import { WebhookConfig } from '../config/webhooks.schema';
import { ClaimedDelivery, WebhookOutbox } from './webhook-outbox';
import { SIGNATURE_HEADER, signatureHeader } from './webhook-signature';

/** Deliveries one replica attempts at once. */
const BATCH = 20;
/** The longest wait between two attempts of one delivery. */
const MAX_BACKOFF_MS = 3_600_000;

/**
 * Every replica's webhook worker (DESIGN.md 12.4, docs/operations.md "Webhooks"): every poll it fans new outbox
 * events out to the configured receivers, claims due deliveries (no other replica holds them meanwhile) and POSTs
 * each, signed; a failure is retried with exponential backoff until webhook_delivery.retry_for_s after the event.
 * Every expiry_scan_interval_s it writes key.expiring events. The outbox is in PostgreSQL, so a restart or a dead
 * receiver loses nothing: at least once, and twice only when a replica dies between a receiver's 2xx and its record.
 */
@Injectable()
export class WebhookDeliveryService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(WebhookDeliveryService.name);
  private readonly timers: NodeJS.Timeout[] = [];
  private running: Promise<void> | undefined;
  private scanning: Promise<void> | undefined;
  /** The last pass failed (logged once until one succeeds). */
  private failing = false;
  private readonly receivers: Map<string, WebhookConfig>;

  constructor(
    private readonly outbox: WebhookOutbox,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {
    // One receiver per url: the first entry's secret, the events of every entry naming it.
    this.receivers = new Map();
    for (const hook of config.webhooks) {
      const known = this.receivers.get(hook.url);
      this.receivers.set(hook.url, known ? { ...known, events: [...new Set([...known.events, ...hook.events])] } : hook);
    }
  }

  private get settings() {
    return this.config.webhook_delivery;
  }

  onApplicationBootstrap(): void {
    // No receiver configured: no poll and no scan (a query a second on every replica for nothing). The settlement
    // still writes its events to the outbox; a receiver configured later gets those not yet dispatched.
    if (this.receivers.size === 0) return;
    this.timers.push(setInterval(() => void this.tick(), this.settings.poll_interval_ms));
    this.timers.push(setInterval(() => void this.scan(), this.settings.expiry_scan_interval_s * 1000));
    for (const timer of this.timers) timer.unref();
    void this.scan();
  }

  /** Before the database closes: an attempt under way finishes and is recorded. */
  async onModuleDestroy(): Promise<void> {
    for (const timer of this.timers.splice(0)) clearInterval(timer);
    await Promise.all([this.running, this.scanning]);
  }

  /** One pass; overlapping passes are skipped. */
  tick(): Promise<void> {
    this.running ??= this.pass().finally(() => (this.running = undefined));
    return this.running;
  }

  scan(): Promise<void> {
    this.scanning ??= this.outbox
      .scanExpiringKeys()
      .then(() => undefined, (err: Error) => this.logger.warn(`Scan for expiring keys failed, retried at the next scan: ${err.message}`))
      .finally(() => (this.scanning = undefined));
    return this.scanning;
  }

  private async pass(): Promise<void> {
    try {
      const routes = [...this.receivers.values()].flatMap((hook) => hook.events.map((type) => ({ url: hook.url, type })));
      while ((await this.outbox.dispatch(routes)) > 0);
      // The lease outlasts the attempt (its timeout), with room for recording it.
      const claimed = await this.outbox.claim([...this.receivers.keys()], BATCH, this.settings.timeout_ms + 30_000);
      await Promise.all(claimed.map((delivery) => this.attempt(delivery)));
      if (this.failing) this.logger.log('Webhook deliveries resumed');
      this.failing = false;
    } catch (err) {
      if (!this.failing) this.logger.warn(`Webhook delivery pass failed, retrying every poll: ${(err as Error).message}`);
      this.failing = true;
    }
  }

  private async attempt(delivery: ClaimedDelivery): Promise<void> {
    const receiver = this.receivers.get(delivery.url)!;
    const body = JSON.stringify({ id: delivery.eventId, type: delivery.type, created: Math.floor(delivery.created.getTime() / 1000), data: delivery.data });
    let status: number | null = null;
    let error: string | null = null;
    try {
      const res = await fetch(delivery.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'gateway-webhooks',
          [SIGNATURE_HEADER]: signatureHeader(process.env[receiver.secret_env] ?? '', body, Math.floor(Date.now() / 1000)),
        },
        body,
        redirect: 'manual',
        signal: AbortSignal.timeout(this.settings.timeout_ms),
      });
      status = res.status;
      await res.body?.cancel();
      if (res.status < 200 || res.status >= 300) error = `HTTP ${res.status}`;
    } catch (err) {
      const cause = (err as Error).cause;
      error = cause instanceof Error ? `${(err as Error).message}: ${cause.message}` : (err as Error).message;
    }
    if (error === null) return this.outbox.delivered(delivery.id, status!);
    const backoff = Math.min(this.settings.retry_base_ms * 2 ** (delivery.attempts - 1), MAX_BACKOFF_MS);
    await this.outbox.failed(delivery.id, status, error, backoff, this.settings.retry_for_s);
  }
}
