import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import { GatewayRequest } from '../common/http/gateway-request';
import { meterOf } from './usage-records';

/** The handler's parameter for its request's UsageMeter (opened by MeteringInterceptor). */
export const Metered = createParamDecorator((_: unknown, context: ExecutionContext) => {
  const meter = meterOf(context.switchToHttp().getRequest<GatewayRequest>());
  if (!meter) throw new Error('No usage meter: the route is not behind the API key and MeteringInterceptor.');
  return meter;
});
