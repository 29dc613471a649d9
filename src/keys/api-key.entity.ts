import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity('api_keys')
export class ApiKey {
  @PrimaryGeneratedColumn('uuid') id: string;
  @Column('uuid', { name: 'account_id' }) accountId: string;
  @Column('text', { nullable: true }) name: string | null;
  /** Hex SHA-256 of the full key; the key itself is never stored. */
  @Column('char', { name: 'key_hash', length: 64, unique: true }) keyHash: string;
  @Column('text', { name: 'display_prefix' }) displayPrefix: string;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @Column('timestamptz', { name: 'revoked_at', nullable: true }) revokedAt: Date | null;
  /** Integer micro-USD per calendar month (UTC), shared by the keys of one budget; null: no limit of its own. */
  @Column('bigint', { name: 'monthly_limit_micros', nullable: true }) monthlyLimitMicros: string | null;
  /** Refused from then on; null: never. Rotation sets the old key's to the end of its grace period. */
  @Column('timestamptz', { name: 'expires_at', nullable: true }) expiresAt: Date | null;
  /** Catalog ids the key may use for chat, Responses and speech; null: all. */
  @Column('text', { array: true, nullable: true }) models: string[] | null;
  /** The month spend and limit this key counts against: a rotated key's successor shares it. */
  @Column('uuid', { name: 'budget_id' }) budgetId: string;
  /** Requests and tokens per minute of its own (DESIGN.md 12.4); null: the config's default (`rate_limits`). */
  @Column('integer', { nullable: true }) rpm: number | null;
  @Column('integer', { nullable: true }) tpm: number | null;
}
