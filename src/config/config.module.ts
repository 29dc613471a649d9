import { DynamicModule, Global, Module } from '@nestjs/common';
import { DATABASE_URL, ENV, GATEWAY_CONFIG } from './config.tokens';
import { Env } from './env';
import { GatewayConfig } from './gateway-config.schema';

export interface GatewayOptions {
  env: Env;
  config: GatewayConfig;
  /** The PostgreSQL URL in use: DATABASE_URL, or the embedded server's. */
  databaseUrl: string;
}

@Global()
@Module({})
export class ConfigModule {
  static register(options: GatewayOptions): DynamicModule {
    return {
      module: ConfigModule,
      providers: [
        { provide: ENV, useValue: options.env },
        { provide: GATEWAY_CONFIG, useValue: options.config },
        { provide: DATABASE_URL, useValue: options.databaseUrl },
      ],
      exports: [ENV, GATEWAY_CONFIG, DATABASE_URL],
    };
  }
}
