import { parseArgs } from 'node:util';

/**
 * The admin CLI: `npm run admin -- <command>`, a thin client of the admin API (/admin/v1).
 * Reads GATEWAY_URL (default http://localhost:8080) and ADMIN_TOKEN. Prints the API's JSON answer;
 * exits 1 when the API answers an error (printed to stderr with its code), 2 on a usage mistake.
 */

const USAGE = `Usage: npm run admin -- <command>

  accounts create <name>
  accounts show <account-id>
  keys create <account-id> [--name <name>] [key controls]
  keys update <key-id> [--name <name>] [key controls]
  keys rotate <key-id> [--grace <seconds>]
  keys list <account-id>
  keys revoke <key-id>
  credits add <account-id> <amount-usd>
  spending-limit set <account-id> <amount-usd|none>
  subscription set <account-id> <trial|active|none> [--ends-at <ISO 8601>]
  usage show <account-id> [--from <date>] [--to <date>]
  statement <account-id> [--from <date>] [--to <date>] [--csv]   (the ledger of the period; CSV printed as is)

Key controls: --monthly-limit <amount-usd|none>  --expires-at <ISO 8601|none>  --models <id,id,…|all>
(an update changes only the controls it names; none/all clears one)

Environment: GATEWAY_URL (default http://localhost:8080), ADMIN_TOKEN (required).`;

interface ApiCall {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  body?: Record<string, unknown>;
}

class UsageError extends Error {}

type Options = {
  name?: string;
  'ends-at'?: string;
  from?: string;
  to?: string;
  'monthly-limit'?: string;
  'expires-at'?: string;
  models?: string;
  grace?: string;
  csv?: boolean;
};

/** Maps the command line to one admin API call. */
export function toApiCall(words: string[], options: Options): ApiCall {
  if (words[0] === 'statement') return statementCall(words.slice(1), options);
  const [group, action, ...args] = words;
  const need = (count: number): string[] => {
    if (args.length !== count) throw new UsageError(`"${group} ${action}" takes ${count} argument(s), got ${args.length}.`);
    return args.map(encodeURIComponent);
  };
  switch (`${group} ${action}`) {
    case 'accounts create':
      return { method: 'POST', path: '/accounts', body: { name: args.join(' ') || missing('name') } };
    case 'accounts show':
      return { method: 'GET', path: `/accounts/${need(1)[0]}` };
    case 'keys create':
      return { method: 'POST', path: `/accounts/${need(1)[0]}/keys`, body: keyControls(options) };
    case 'keys update':
      return { method: 'PATCH', path: `/keys/${need(1)[0]}`, body: keyControls(options) };
    case 'keys rotate': {
      const [id] = need(1);
      return { method: 'POST', path: `/keys/${id}/rotate`, body: options.grace === undefined ? {} : { grace_s: /^\d+$/.test(options.grace) ? Number(options.grace) : options.grace } };
    }
    case 'keys list':
      return { method: 'GET', path: `/accounts/${need(1)[0]}/keys` };
    case 'keys revoke':
      return { method: 'DELETE', path: `/keys/${need(1)[0]}` };
    case 'credits add': {
      const [id] = need(2);
      return { method: 'POST', path: `/accounts/${id}/credits`, body: { amount_usd: args[1] } };
    }
    case 'spending-limit set': {
      const [id] = need(2);
      return { method: 'PUT', path: `/accounts/${id}/spending-limit`, body: { monthly_limit_usd: args[1] === 'none' ? null : args[1] } };
    }
    case 'subscription set': {
      const [id] = need(2);
      const body: Record<string, unknown> = { status: args[1] };
      if (options['ends-at']) body.ends_at = options['ends-at'];
      return { method: 'PUT', path: `/accounts/${id}/subscription`, body };
    }
    case 'usage show': {
      const [id] = need(1);
      return { method: 'GET', path: `/accounts/${id}/usage${periodQuery(options)}` };
    }
    default:
      throw new UsageError(`Unknown command "${words.join(' ')}".`);
  }
}

/** `statement <account-id>`: the account's statement, JSON or (--csv) CSV. */
function statementCall(args: string[], options: Options): ApiCall {
  if (args.length !== 1) throw new UsageError(`"statement" takes 1 argument(s), got ${args.length}.`);
  return { method: 'GET', path: `/accounts/${encodeURIComponent(args[0])}/statement${periodQuery(options, options.csv ? 'csv' : undefined)}` };
}

/** `?from=…&to=…` (and `format`) from the options given; '' when none. */
function periodQuery(options: Options, format?: string): string {
  const query = new URLSearchParams();
  if (options.from) query.set('from', options.from);
  if (options.to) query.set('to', options.to);
  if (format) query.set('format', format);
  return query.size ? `?${query}` : '';
}

/** The key controls named on the command line (DESIGN.md section 10): none/all is null, the API's "no control". */
function keyControls(options: Options): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (options.name) body.name = options.name;
  if (options['monthly-limit'] !== undefined) body.monthly_limit_usd = options['monthly-limit'] === 'none' ? null : options['monthly-limit'];
  if (options['expires-at'] !== undefined) body.expires_at = options['expires-at'] === 'none' ? null : options['expires-at'];
  if (options.models !== undefined) body.models = options.models === 'all' ? null : options.models.split(',').map((id) => id.trim()).filter(Boolean);
  return body;
}

function missing(what: string): never {
  throw new UsageError(`Missing ${what}.`);
}

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      'ends-at': { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      'monthly-limit': { type: 'string' },
      'expires-at': { type: 'string' },
      models: { type: 'string' },
      grace: { type: 'string' },
      csv: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || positionals.length === 0 || positionals[0] === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const call = toApiCall(positionals, values);
  const token = process.env.ADMIN_TOKEN;
  if (!token) throw new UsageError('ADMIN_TOKEN is not set.');
  const base = (process.env.GATEWAY_URL ?? 'http://localhost:8080').replace(/\/+$/, '');

  const res = await fetch(`${base}/admin/v1${call.path}`, {
    method: call.method,
    headers: { authorization: `Bearer ${token}`, ...(call.body ? { 'content-type': 'application/json' } : {}) },
    body: call.body ? JSON.stringify(call.body) : undefined,
  });
  const text = await res.text();
  if (!res.ok) {
    process.stderr.write(`Error ${res.status}: ${describeError(text)}\n`);
    return 1;
  }
  // A CSV statement is printed as it came; JSON answers are pretty-printed.
  if ((res.headers.get('content-type') ?? '').startsWith('text/csv')) process.stdout.write(text);
  else process.stdout.write(`${JSON.stringify(JSON.parse(text), null, 2)}\n`);
  return 0;
}

function describeError(text: string): string {
  try {
    const { error } = JSON.parse(text) as { error: { code: string; message: string } };
    return `${error.code}: ${error.message}`;
  } catch {
    return text;
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: Error) => {
      const usage = err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
      process.stderr.write(usage ? `${err.message}\n\n${USAGE}\n` : `Could not reach the gateway: ${err.message}\n`);
      process.exit(usage ? 2 : 1);
    },
  );
}
