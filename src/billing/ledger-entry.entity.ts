import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

export type LedgerKind = 'top_up' | 'charge';

/** Append-only: amount is signed (+top-up, −charge) and the ledger sums to the balance. */
@Entity('ledger_entries')
export class LedgerEntry {
  @PrimaryGeneratedColumn('increment', { type: 'bigint' }) id: string;
  @Column('uuid', { name: 'account_id' }) accountId: string;
  @Column('text') kind: LedgerKind;
  @Column('bigint', { name: 'amount_micros' }) amountMicros: string;
  @Column('bigint', { name: 'balance_after_micros' }) balanceAfterMicros: string;
  @Column('text', { name: 'request_id', nullable: true }) requestId: string | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}
