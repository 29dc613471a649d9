import { DataSource } from 'typeorm';
import { dataSourceOptions } from './src/database/data-source.options';

/** The DataSource used by the TypeORM CLI (`npm run migration:*`); the app builds the same options. */
export default new DataSource(
  dataSourceOptions(process.env.DATABASE_URL ?? 'postgres://postgres:postgres@127.0.0.1:54329/gateway'),
);
