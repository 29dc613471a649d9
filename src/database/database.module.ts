import { DynamicModule } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, DataSourceOptions } from 'typeorm';
import { GatewayOptions } from '../config/config.module';
import { gatewayDataSourceOptions, runMigrations } from './data-source.options';

/** TypeORM's DataSource for the app; migrations first, inside the module's connect retries. */
export function databaseModule(options: GatewayOptions): DynamicModule {
  return TypeOrmModule.forRootAsync({
    useFactory: () => gatewayDataSourceOptions(options.databaseUrl, options.env.databasePoolMax),
    dataSourceFactory: async (dataSourceOptions?: DataSourceOptions) => {
      await runMigrations(options.databaseUrl);
      return new DataSource(dataSourceOptions!);
    },
  });
}
