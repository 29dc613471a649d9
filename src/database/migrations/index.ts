import { InitialSchema1763870000000 } from './1763870000000-InitialSchema';
import { BillingFunctions1763880000000 } from './1763880000000-BillingFunctions';
import { BillingBatches1763890000000 } from './1763890000000-BillingBatches';
import { BillingLeases1763900000000 } from './1763900000000-BillingLeases';
import { LeaseLifetime1763920000000 } from './1763920000000-LeaseLifetime';
import { BillingFunctionFiles1763930000000 } from './1763930000000-BillingFunctionFiles';
import { UsageDeployment1763950000000 } from './1763950000000-UsageDeployment';
import { KeyControls1764240000000 } from './1764240000000-KeyControls';
import { TokenClasses1764260000000 } from './1764260000000-TokenClasses';
import { CacheWrite1hTokens1764280000000 } from './1764280000000-CacheWrite1hTokens';
import { IdempotencyKeys1764300000000 } from './1764300000000-IdempotencyKeys';
import { PriceVariants1764320000000 } from './1764320000000-PriceVariants';
import { RateLimits1764340000000 } from './1764340000000-RateLimits';
import { Webhooks1764360000000 } from './1764360000000-Webhooks';
import { AdminAudit1764380000000 } from './1764380000000-AdminAudit';

/** Every migration, in order. Listed explicitly so ts-node, jest and the built app share one list. */
export const MIGRATIONS = [
  InitialSchema1763870000000,
  BillingFunctions1763880000000,
  BillingBatches1763890000000,
  BillingLeases1763900000000,
  LeaseLifetime1763920000000,
  BillingFunctionFiles1763930000000,
  UsageDeployment1763950000000,
  KeyControls1764240000000,
  TokenClasses1764260000000,
  CacheWrite1hTokens1764280000000,
  IdempotencyKeys1764300000000,
  PriceVariants1764320000000,
  RateLimits1764340000000,
  Webhooks1764360000000,
  AdminAudit1764380000000,
];
