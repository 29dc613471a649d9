import { Column, Entity, PrimaryColumn } from 'typeorm';

/** Per account and UTC calendar month: chat spend, chat holds, included (audio) requests used. */
@Entity('monthly_counters')
export class MonthlyCounter {
  @PrimaryColumn('uuid', { name: 'account_id' }) accountId: string;
  @PrimaryColumn('date') month: string;
  @Column('bigint', { name: 'spend_micros', default: 0 }) spendMicros: string;
  @Column('bigint', { name: 'held_micros', default: 0 }) heldMicros: string;
  @Column('integer', { name: 'fair_use_used', default: 0 }) fairUseUsed: number;
}
