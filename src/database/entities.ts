import { Account } from '../billing/account.entity';
import { Hold } from '../billing/hold.entity';
import { LedgerEntry } from '../billing/ledger-entry.entity';
import { MonthlyCounter } from '../billing/monthly-counter.entity';
import { ApiKey } from '../keys/api-key.entity';
import { UsageRecord } from '../usage/usage-record.entity';
import { Setting } from './setting.entity';

export const ENTITIES = [Account, ApiKey, LedgerEntry, Hold, MonthlyCounter, UsageRecord, Setting];
