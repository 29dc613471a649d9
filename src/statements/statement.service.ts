import { Injectable, Logger } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { DataSource } from 'typeorm';
import { drained } from '../common/http/drained';
import { microsToUsd } from '../common/money';
import { ErrorCode, GatewayError } from '../errors';
import { CatalogService } from '../models/catalog.service';
import { balanceCsv, CSV_COLUMNS, csvLine, LedgerMovementRow, movementCsv, statementMovement } from './statement-rows';

/** Ledger entries read per query: the statement streams out page by page, never the whole period in memory. */
const PAGE = 500;

export type StatementFormat = 'json' | 'csv';

export interface StatementRequest {
  accountId: string;
  from: Date;
  to: Date;
  format: StatementFormat;
}

/**
 * An account's statement (DESIGN.md section 11, docs/billing.md "Statements"): the opening balance (every ledger
 * movement before `from`), each movement of [from, to) in ledger order (top-ups; charges with their request,
 * key, model, tokens and µUSD by class), the closing balance. Opening + movements = closing, to the µUSD, by
 * construction: both balances are sums of the same ledger that sums to the account's balance.
 */
@Injectable()
export class StatementService {
  private readonly logger = new Logger(StatementService.name);

  constructor(
    private readonly db: DataSource,
    private readonly catalog: CatalogService,
  ) {}

  async write(res: ServerResponse, request: StatementRequest): Promise<void> {
    const { accountId, from, to, format } = request;
    const [account] = await this.db.query(`SELECT id FROM accounts WHERE id = $1`, [accountId]);
    if (!account) throw new GatewayError(ErrorCode.NotFound, `No account with id ${accountId}.`);
    const [{ opening }] = await this.db.query(
      `SELECT coalesce(sum(amount_micros), 0)::text AS opening FROM ledger_entries WHERE account_id = $1 AND created_at < $2`,
      [accountId, from],
    );
    let balance = BigInt(opening);
    let count = 0;
    const out = new Writer(res);
    try {
      if (format === 'csv') {
        const name = `statement-${accountId}-${from.toISOString().slice(0, 10)}-${to.toISOString().slice(0, 10)}.csv`;
        res.writeHead(200, { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': `attachment; filename="${name}"` });
        await out.write(csvLine([...CSV_COLUMNS]) + balanceCsv('opening_balance', from, balance));
      } else {
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
        const head = { account_id: accountId, from: from.toISOString(), to: to.toISOString(), currency: 'USD', opening_balance_micros: balance.toString(), opening_balance_usd: microsToUsd(balance) };
        await out.write(`${JSON.stringify(head).slice(0, -1)},"movements":[`);
      }
      for (let after = '0'; ; ) {
        const rows = await this.page(accountId, from, to, after);
        let text = '';
        for (const row of rows) {
          const movement = statementMovement(row, row.model ? this.catalog.find(row.model) : undefined);
          balance += BigInt(row.amount_micros);
          text += format === 'csv' ? movementCsv(movement) : (count > 0 ? ',' : '') + JSON.stringify(movement);
          count++;
        }
        if (text !== '') await out.write(text);
        if (rows.length < PAGE) break;
        after = rows[rows.length - 1].id;
      }
    } catch (err) {
      // The status line is out: the only honest end is a cut one, which no client takes for a whole statement.
      if (!res.destroyed) this.logger.error({ err, accountId }, `Statement of ${accountId} failed after ${count} movements: ${(err as Error).message}`);
      res.destroy();
      return;
    }
    if (format === 'csv') res.end(balanceCsv('closing_balance', to, balance));
    else res.end(`],"movement_count":${count},"closing_balance_micros":"${balance}","closing_balance_usd":"${microsToUsd(balance)}"}`);
  }

  private page(accountId: string, from: Date, to: Date, afterId: string): Promise<LedgerMovementRow[]> {
    return this.db.query(
      `SELECT l.id::text AS id, l.created_at, l.kind, l.amount_micros::text AS amount_micros,
              l.balance_after_micros::text AS balance_after_micros, l.request_id,
              u.key_id, u.model, u.endpoint, u.prompt_tokens, u.completion_tokens, u.cached_tokens, u.cache_write_tokens,
              u.cache_write_1h_tokens, u.audio_input_tokens, u.audio_output_tokens, u.reasoning_tokens, u.price_variants, u.tool_uses
         FROM ledger_entries l
         LEFT JOIN usage_records u ON u.request_id = l.request_id
        WHERE l.account_id = $1 AND l.created_at >= $2 AND l.created_at < $3 AND l.id > $4
        ORDER BY l.id
        LIMIT ${PAGE}`,
      [accountId, from, to, afterId],
    );
  }
}

/** Writes with backpressure: waits for 'drain' when the client reads slower than the database pages. */
class Writer {
  constructor(private readonly res: ServerResponse) {}

  async write(text: string): Promise<void> {
    if (this.res.destroyed) throw new Error('the client went away');
    if (this.res.write(text)) return;
    await drained(this.res);
  }
}
