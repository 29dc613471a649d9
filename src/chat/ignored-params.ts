import { Injectable } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { MetricsService } from '../metrics/metrics.service';

/** The response header that names what the gateway accepted and did not use (DESIGN.md section 11). */
export const IGNORED_PARAMS_HEADER = 'x-gateway-ignored-params';

/** One ignored field, include value or withdrawn tool: its name for the header, and its metric label. */
export interface IgnoredParam {
  /** As the client sent it: `output_config`, `include:reasoning.encrypted_content`, `tools:web_search`. */
  name: string;
  /** A name of the route's fixed list, or `other` (a field the gateway does not know): label values stay a closed set. */
  label: string;
}

/** The most names one header lists: a body of ten thousand unknown fields gets a header of bounded size. */
const MOST_NAMED = 32;
/** What a header can carry as it is: visible ASCII but the comma that separates the names. */
const HEADER_SAFE = /^[\x21-\x2b\x2d-\x7e]{1,128}$/;

/** An ignored param under its own name when `known` names it, else under the label `other`. */
export function ignoredParam(name: string, known: ReadonlySet<string>): IgnoredParam {
  return { name, label: known.has(name) ? name : 'other' };
}

/** The header's value: the names in request order, unsafe ones percent-encoded, the rest counted past MOST_NAMED. */
export function ignoredParamsHeader(ignored: readonly IgnoredParam[]): string {
  const names = ignored.slice(0, MOST_NAMED).map(({ name }) => (HEADER_SAFE.test(name) ? name : encodeURIComponent(name.slice(0, 64))));
  if (ignored.length > MOST_NAMED) names.push(`+${ignored.length - MOST_NAMED} more`);
  return names.join(',');
}

/**
 * Tells the client and the operator what a request asked for that the gateway accepted and did not use:
 * the `x-gateway-ignored-params` header (none when nothing was ignored) and gateway_ignored_params_total{route,param}.
 */
@Injectable()
export class IgnoredParamsReport {
  constructor(private readonly metrics: MetricsService) {}

  report(route: string, res: ServerResponse, ignored: readonly IgnoredParam[]): void {
    if (ignored.length === 0) return;
    res.setHeader(IGNORED_PARAMS_HEADER, ignoredParamsHeader(ignored));
    for (const { label } of ignored) this.metrics.paramIgnored(route, label);
  }
}
