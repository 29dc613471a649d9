import { UsageQueryDto } from '../../usage/dto/usage-query.dto';

/**
 * The period of the all-accounts overview, as every usage period (src/usage/usage-period.ts): `from` inclusive,
 * `to` exclusive, both defaulting to this UTC month so far. Its own class so that the overview's query can grow
 * without touching the usage API's.
 */
export class OverviewQueryDto extends UsageQueryDto {}
