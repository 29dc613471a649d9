import { Column, Entity, PrimaryColumn } from 'typeorm';

/** Small key/value store for instance-wide state, such as the generated admin token's hash. */
@Entity('settings')
export class Setting {
  @PrimaryColumn('text') key: string;
  @Column('text') value: string;
}
