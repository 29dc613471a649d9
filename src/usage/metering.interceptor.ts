import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { finalize, Observable } from 'rxjs';
import { GatewayReply, GatewayRequest } from '../common/http/gateway-request';
import { UsageRecords } from './usage-records';

/**
 * Meters every request made with an API key (the /v1 routes): opens its usage meter before the handler
 * and tells it when the handler is done; the meter writes the record once the response has closed too.
 */
@Injectable()
export class MeteringInterceptor implements NestInterceptor {
  constructor(private readonly records: UsageRecords) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const http = context.switchToHttp();
    const meter = this.records.open(http.getRequest<GatewayRequest>(), http.getResponse<GatewayReply>().raw);
    if (!meter) return next.handle();
    return next.handle().pipe(finalize(() => meter.handled()));
  }
}
