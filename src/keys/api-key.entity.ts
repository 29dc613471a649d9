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
}
