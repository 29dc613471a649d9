import { DynamicModule } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, DataSourceOptions } from 'typeorm';
import { GatewayOptions } from '../config/config.module';
import { gatewayDataSourceOptions, runMigrations } from './data-source.options';

/** TypeORM's DataSource for the app; migrations first. */
export function databaseModule(options: GatewayOptions): DynamicModule {
  let dataSource: DataSource | undefined;
  return TypeOrmModule.forRootAsync({
    useFactory: () => ({
      ...gatewayDataSourceOptions(options.databaseUrl, options.env.databasePoolMax, () => dataSource?.isInitialized === true),
      // No retries: main.ts reached the server a moment before (waitForDatabase, or the embedded server it started),
      // so what fails here (a migration refused, say) fails again; Nest's ten tries would log an error each and hold
      // back the one line of a failed start by 30 s.
      toRetry: () => false,
    }),
    dataSourceFactory: async (dataSourceOptions?: DataSourceOptions) => {
      await runMigrations(options.databaseUrl);
      dataSource = new DataSource(dataSourceOptions!);
      return dataSource;
    },
  });
}
