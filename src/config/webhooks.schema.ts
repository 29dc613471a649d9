import { ArrayMinSize, IsArray, IsIn, IsInt, IsString, IsUrl, Matches, Max, Min, ValidateBy } from 'class-validator';

/** The events a webhook may subscribe to (DESIGN.md 12.4, docs/operations.md "Webhooks"). */
export const WEBHOOK_EVENTS = ['budget.threshold', 'credits.low', 'key.expiring'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENTS)[number];

/** The secret is read from the environment at start: a webhook whose variable is unset or empty could only send unverifiable calls. */
function NamesSetVariable(): PropertyDecorator {
  return ValidateBy({
    name: 'namesSetVariable',
    validator: {
      validate: (name: unknown) => typeof name === 'string' && (process.env[name] ?? '') !== '',
      defaultMessage: (args) => `$property names the environment variable ${JSON.stringify(args?.value)}, which is not set (it holds the signing secret)`,
    },
  });
}

/** One receiver of alerts: `webhooks: [{url, secret_env, events}]` (docs/configuration.md, "webhooks"). */
export class WebhookConfig {
  @IsUrl({ protocols: ['http', 'https'], require_protocol: true, require_tld: false }) url: string;
  @IsString() @Matches(/^[A-Za-z_][A-Za-z0-9_]*$/) @NamesSetVariable() secret_env: string;
  @IsArray() @ArrayMinSize(1) @IsIn(WEBHOOK_EVENTS, { each: true }) events: WebhookEventType[];
}

/** How the outbox is delivered (docs/configuration.md, "webhook_delivery"); the defaults suit production. */
export class WebhookDeliveryConfig {
  /** How often each replica looks for due deliveries. */
  @IsInt() @Min(10) @Max(60_000) poll_interval_ms = 1000;
  /** The first retry waits this long, each next one twice as long (at most an hour). */
  @IsInt() @Min(1) @Max(3_600_000) retry_base_ms = 10_000;
  /** A delivery still failing this long after its event was written is given up (marked failed). */
  @IsInt() @Min(1) @Max(7 * 86_400) retry_for_s = 86_400;
  /** How long one POST may take. */
  @IsInt() @Min(100) @Max(60_000) timeout_ms = 10_000;
  /** How often each replica looks for keys expiring within 7 days (key.expiring). */
  @IsInt() @Min(1) @Max(86_400) expiry_scan_interval_s = 300;
}
