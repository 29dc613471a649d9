import { Injectable, Logger } from '@nestjs/common';
import { MetricsService } from '../metrics/metrics.service';

/**
 * Reports the tool calls an upstream sent with arguments that are not a JSON object (a model's broken
 * output, or a provider's bug): counted in gateway_upstream_malformed_tool_arguments_total and logged as a
 * warning with the request id and the model, never the arguments (they may hold user data). The client
 * still gets a valid answer (docs/messages.md, "Tool calls").
 */
@Injectable()
export class MalformedToolArguments {
  private readonly logger = new Logger('Messages');

  constructor(private readonly metrics: MetricsService) {}

  report(endpoint: string, requestId: string, model: string, calls: number, answered: string): void {
    if (calls === 0) return;
    this.metrics.upstreamToolArgumentsMalformed(endpoint, model, calls);
    this.logger.warn(
      { requestId, model },
      `Request ${requestId}: the upstream of ${model} sent ${calls} tool call(s) whose arguments are not a JSON object; ${answered}`,
    );
  }
}
