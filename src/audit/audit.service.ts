import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ErrorCode, GatewayError } from '../errors';
import { ADMIN_ACTOR, AuditAction, AuditTarget } from './audit-action';

/** One row of GET /admin/v1/audit. */
export interface AuditEntryView {
  /** A bigserial, as a string (it may pass 2^53). */
  id: string;
  created_at: string;
  actor: string;
  action: string;
  account_id: string | null;
  key_id: string | null;
  request_id: string;
  details: Record<string, unknown>;
}

export interface AuditPage {
  object: 'list';
  data: AuditEntryView[];
  has_more: boolean;
}

/** A row as PostgreSQL gives it: the view's fields, the time as a Date. */
type AuditRow = Omit<AuditEntryView, 'created_at'> & { created_at: Date };

/** The audit of who did what in the admin API (admin_audit): written after each admin action that succeeded, read newest first. */
@Injectable()
export class AuditService {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * One row for an action done by `request`. A key's row without an account (the key routes answer without it) takes
   * the key's own account, read in the same statement; a key keeps its account for life, revoked or not.
   */
  async record(action: AuditAction, requestId: string, target: AuditTarget): Promise<void> {
    await this.db.query(
      `INSERT INTO admin_audit (actor, action, account_id, key_id, request_id, details)
       VALUES ($1, $2, COALESCE($3::uuid, (SELECT k.account_id FROM api_keys k WHERE k.id = $4::uuid)), $4::uuid, $5, $6::jsonb)`,
      [ADMIN_ACTOR, action, target.accountId, target.keyId, requestId, JSON.stringify(target.details)],
    );
  }

  /**
   * Up to `limit` rows, newest first (ties by id), of one account or of all; `before` is the id of the last row
   * already shown: the page goes on after it. An id that names no row is refused rather than answered with nothing.
   */
  async page(opts: { accountId?: string; limit: number; before?: string }): Promise<AuditPage> {
    const params: unknown[] = [opts.limit + 1];
    const where: string[] = [];
    if (opts.accountId !== undefined) {
      params.push(opts.accountId);
      where.push(`a.account_id = $${params.length}::uuid`);
    }
    if (opts.before !== undefined) {
      const [cursor] = await this.db.query(`SELECT 1 FROM admin_audit WHERE id = $1::bigint`, [opts.before]);
      if (!cursor) throw new GatewayError(ErrorCode.InvalidRequest, `before must be the id of an audit row; ${opts.before} is none.`, 'before');
      params.push(opts.before);
      where.push(`(a.created_at, a.id) < (SELECT b.created_at, b.id FROM admin_audit b WHERE b.id = $${params.length}::bigint)`);
    }
    const rows: AuditRow[] = await this.db.query(
      `SELECT a.id::text AS id, a.created_at, a.actor, a.action, a.account_id, a.key_id, a.request_id, a.details
         FROM admin_audit a ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
        ORDER BY a.created_at DESC, a.id DESC LIMIT $1`,
      params,
    );
    const hasMore = rows.length > opts.limit;
    return { object: 'list', data: rows.slice(0, opts.limit).map(view), has_more: hasMore };
  }
}

function view(row: AuditRow): AuditEntryView {
  return {
    id: row.id,
    created_at: row.created_at.toISOString(),
    actor: row.actor,
    action: row.action,
    account_id: row.account_id,
    key_id: row.key_id,
    request_id: row.request_id,
    details: row.details,
  };
}
