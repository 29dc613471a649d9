import { TEST_ADMIN_TOKEN } from './test-app';

export interface AdminResponse<T = any> {
  status: number;
  body: T;
}

/** Talks to the admin API over HTTP, as an operator would. */
export class AdminClient {
  constructor(
    private readonly baseUrl: string,
    private readonly token = TEST_ADMIN_TOKEN,
  ) {}

  async request<T = any>(method: string, path: string, body?: unknown): Promise<AdminResponse<T>> {
    const res = await fetch(`${this.baseUrl}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }

  private async ok<T = any>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.request<T>(method, path, body);
    if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  }

  /**
   * Creates an account with a key. Options: credits (USD), monthly limit (USD), subscription.
   * Returns the account id and the full API key.
   */
  async createAccount(
    opts: { name?: string; creditsUsd?: number | string; monthlyLimitUsd?: number | string; subscription?: 'trial' | 'active'; endsAt?: string } = {},
  ): Promise<{ accountId: string; key: string; keyId: string }> {
    const account = await this.ok('POST', '/accounts', { name: opts.name ?? `test-${Date.now()}` });
    if (opts.creditsUsd !== undefined) await this.ok('POST', `/accounts/${account.id}/credits`, { amount_usd: opts.creditsUsd });
    if (opts.monthlyLimitUsd !== undefined) {
      await this.ok('PUT', `/accounts/${account.id}/spending-limit`, { monthly_limit_usd: opts.monthlyLimitUsd });
    }
    if (opts.subscription) {
      await this.ok('PUT', `/accounts/${account.id}/subscription`, { status: opts.subscription, ends_at: opts.endsAt });
    }
    const key = await this.ok('POST', `/accounts/${account.id}/keys`, { name: 'test' });
    return { accountId: account.id, key: key.key, keyId: key.id };
  }

  addCredits(id: string, amountUsd: string) {
    return this.ok('POST', `/accounts/${id}/credits`, { amount_usd: amountUsd });
  }

  account(id: string) {
    return this.ok('GET', `/accounts/${id}`);
  }

  usage(id: string, query = '') {
    return this.ok('GET', `/accounts/${id}/usage${query}`);
  }
}
