import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** Worst-case cost reserved for one in-flight chat request. */
@Entity('holds')
export class Hold {
  @PrimaryGeneratedColumn('uuid') id: string;
  @Column('uuid', { name: 'account_id' }) accountId: string;
  @Column('text', { name: 'request_id', unique: true }) requestId: string;
  @Column('bigint', { name: 'amount_micros' }) amountMicros: string;
  /** First day of the UTC month the hold counts against. */
  @Column('date') month: string;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @Column('timestamptz', { name: 'expires_at' }) expiresAt: Date;
  /** The key budget of a key's own lease (docs/billing.md, "Key limits"); null for the account's shared lease. */
  @Column('uuid', { name: 'budget_id', nullable: true }) budgetId: string | null;
}
