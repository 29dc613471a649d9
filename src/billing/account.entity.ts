import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

export type SubscriptionStatus = 'none' | 'trial' | 'active';

@Entity('accounts')
export class Account {
  @PrimaryGeneratedColumn('uuid') id: string;
  @Column('text') name: string;
  /** Integer micro-USD; pg returns bigint as string. */
  @Column('bigint', { name: 'balance_micros', default: 0 }) balanceMicros: string;
  @Column('bigint', { name: 'reserved_micros', default: 0 }) reservedMicros: string;
  @Column('bigint', { name: 'monthly_limit_micros', nullable: true }) monthlyLimitMicros: string | null;
  @Column('text', { name: 'subscription_status', default: 'none' }) subscriptionStatus: SubscriptionStatus;
  @Column('timestamptz', { name: 'subscription_ends_at', nullable: true }) subscriptionEndsAt: Date | null;
  @Column('boolean', { name: 'trial_used', default: false }) trialUsed: boolean;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  /** Requests and tokens per minute of its own (DESIGN.md 12.4); null: the config's default (`rate_limits`). */
  @Column('integer', { nullable: true }) rpm: number | null;
  @Column('integer', { nullable: true }) tpm: number | null;
  /** credits.low is sent when the balance goes below this (docs/operations.md, "Webhooks"); null: never. */
  @Column('bigint', { name: 'low_credits_micros', nullable: true }) lowCreditsMicros: string | null;
}
