/** The admin actions the audit records (DESIGN.md 12.5), one per mutating admin route. */
export const AUDIT_ACTIONS = [
  'account.create',
  'account.update',
  'account.credits',
  'account.spending_limit',
  'account.subscription',
  'key.create',
  'key.update',
  'key.rotate',
  'key.revoke',
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/**
 * Who did it. There is one admin token and it has no name, so every action is the operator's, `admin`; a scheme of
 * named admin tokens would put the presenting token's name here.
 */
export const ADMIN_ACTOR = 'admin';

/** What a row says an action touched: its account, its key, and the request body's fields. */
export interface AuditTarget {
  accountId: string | null;
  keyId: string | null;
  details: Record<string, unknown>;
}

/**
 * What `action` touched, from the route's `:id`, its body and its answer. Account routes answer with the account;
 * key routes with the key, whose account is not in it (the row's account is then looked up by key id, see
 * AuditService.record). A rotation's row is the new key's, and names the one it replaced. The details are the body's
 * fields only: the answer of a key's creation or rotation holds its secret, which must never reach the audit.
 */
export function auditTarget(action: AuditAction, routeId: string | undefined, body: unknown, answer: unknown): AuditTarget {
  const details = isPlainObject(body) ? { ...body } : {};
  const answerId = isPlainObject(answer) && typeof answer.id === 'string' ? answer.id : null;
  switch (action) {
    case 'account.create':
      return { accountId: answerId, keyId: null, details };
    case 'key.create':
      return { accountId: routeId ?? null, keyId: answerId, details };
    case 'key.rotate':
      return { accountId: null, keyId: answerId, details: { ...details, replaced_key_id: routeId ?? null } };
    case 'key.update':
    case 'key.revoke':
      return { accountId: null, keyId: routeId ?? answerId, details };
    default:
      return { accountId: routeId ?? answerId, keyId: null, details };
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
