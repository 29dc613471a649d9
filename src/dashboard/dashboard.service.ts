import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

export interface AccountListItem {
  id: string;
  name: string;
  created_at: string;
}

const ACCOUNT_LIST_LIMIT = 500;

/** The account picker's data; the figures themselves come from the admin API. */
@Injectable()
export class DashboardService {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

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
}
