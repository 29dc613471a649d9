import type { ServerResponse } from 'node:http';
import { abortOnClientClose } from '../common/http/client-abort';
import { GatewayRequest } from '../common/http/gateway-request';
import { FairUseService } from '../entitlements/fair-use.service';
import { UsageMeter } from '../usage/usage-meter';

/** One transcription or speech request, as its controller hands it over. */
export interface AudioCall {
  requestId: string;
  meter: UsageMeter;
  /** Fires when the client goes away: the upstream call stops. */
  signal: AbortSignal;
  /** Gives the request taken from the fair-use allowance back, at once, when the request fails. */
  giveBackFairUse(): Promise<void>;
}

export function audioCall(req: GatewayRequest, res: ServerResponse, meter: UsageMeter, fairUse: FairUseService): AudioCall {
  return { requestId: req.id, meter, signal: abortOnClientClose(res), giveBackFairUse: () => fairUse.giveBackFor(req) };
}
