import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AccountsService } from '../billing/accounts.service';
import { LATEST_LIMIT, LatestFilters, LatestPageQuery, UsagePeriod, UsageReportService } from '../usage/usage-report.service';

export interface AccountListItem {
  id: string;
  name: string;
  created_at: string;
}

const ACCOUNT_LIST_LIMIT = 500;

/** The account picker's data and the pages of latest requests; the other figures come from the admin API. */
@Injectable()
export class DashboardService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly accounts: AccountsService,
    private readonly usage: UsageReportService,
  ) {}

  /** Newest accounts first, optionally those whose name contains `query` or whose id is `query`. */
  async findAccounts(query: string | undefined): Promise<AccountListItem[]> {
    const q = query?.trim() ?? '';
    const rows: { id: string; name: string; created_at: Date }[] = await this.db.query(
      `SELECT id, name, created_at FROM accounts
        WHERE $1 = '' OR id::text = lower($1) OR strpos(lower(name), lower($1)) > 0
        ORDER BY created_at DESC, id LIMIT ${ACCOUNT_LIST_LIMIT}`,
      [q],
    );
    return rows.map((r) => ({ id: r.id, name: r.name, created_at: r.created_at.toISOString() }));
  }

  /**
   * One page of an account's requests in the period, newest first, narrowed by `filters` ("Latest requests" and its
   * "Load more"), each with its key's name and prefix.
   */
  async requests(accountId: string, period: UsagePeriod, page: Partial<LatestPageQuery>, filters: LatestFilters = {}) {
    await this.accounts.findOrFail(accountId);
    return this.usage.latestPage(accountId, period, { after: page.after, limit: page.limit ?? LATEST_LIMIT }, filters, true);
  }
}
