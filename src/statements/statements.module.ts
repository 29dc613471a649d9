import { Module } from '@nestjs/common';
import { AdminTokenModule } from '../admin-token/admin-token.module';
import { ModelsModule } from '../models/models.module';
import { AdminStatementController, StatementController } from './statements.controller';
import { StatementService } from './statement.service';

/** Account statements (issue 35): the ledger of a period, with opening and closing balances, as JSON or CSV. */
@Module({
  imports: [ModelsModule, AdminTokenModule],
  controllers: [StatementController, AdminStatementController],
  providers: [StatementService],
})
export class StatementsModule {}
