import type { ToolUse } from './usage-record';
import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** One row per authenticated request, failures included (DESIGN.md section 8). */
@Entity('usage_records')
export class UsageRecord {
  @PrimaryGeneratedColumn('increment', { type: 'bigint' }) id: string;
  @Column('text', { name: 'request_id', unique: true }) requestId: string;
  @Column('uuid', { name: 'account_id' }) accountId: string;
  @Column('uuid', { name: 'key_id' }) keyId: string;
  @Column('text', { nullable: true }) model: string | null;
  @Column('text') endpoint: string;
  @Column('integer') status: number;
  @Column('text', { name: 'error_code', nullable: true }) errorCode: string | null;
  @Column('integer', { name: 'prompt_tokens', default: 0 }) promptTokens: number;
  @Column('integer', { name: 'completion_tokens', default: 0 }) completionTokens: number;
  /** Token classes (DESIGN.md section 10): parts of prompt_tokens… */
  @Column('integer', { name: 'cached_tokens', default: 0 }) cachedTokens: number;
  @Column('integer', { name: 'cache_write_tokens', default: 0 }) cacheWriteTokens: number;
  /** …of which written for an hour… */
  @Column('integer', { name: 'cache_write_1h_tokens', default: 0 }) cacheWrite1hTokens: number;
  @Column('integer', { name: 'audio_input_tokens', default: 0 }) audioInputTokens: number;
  /** …and of completion_tokens. */
  @Column('integer', { name: 'reasoning_tokens', default: 0 }) reasoningTokens: number;
  @Column('integer', { name: 'audio_output_tokens', default: 0 }) audioOutputTokens: number;
  @Column('numeric', { name: 'audio_seconds', precision: 12, scale: 3, default: 0 }) audioSeconds: string;
  @Column('integer', { name: 'input_chars', default: 0 }) inputChars: number;
  @Column('bigint', { name: 'cost_micros', default: 0 }) costMicros: string;
  @Column('integer', { name: 'latency_ms', default: 0 }) latencyMs: number;
  @Column('boolean', { default: false }) streamed: boolean;
  /** The deployment (`provider/upstream_model`) that served, or last failed, the request. */
  @Column('text', { nullable: true }) deployment: string | null;
  @Column('smallint', { nullable: true }) attempts: number | null;
  /** The price variants the charge applied (their `when`) and the server tools' uses and µUSD (DESIGN.md 12.2); null: none. */
  @Column('jsonb', { name: 'price_variants', nullable: true }) priceVariants: object[] | null;
  @Column('jsonb', { name: 'tool_uses', nullable: true }) toolUses: Record<string, ToolUse> | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}
