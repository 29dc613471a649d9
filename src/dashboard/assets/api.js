// The admin API as the page reads it. The admin token lives in sessionStorage only (gone when the tab closes).
const TOKEN_KEY = 'gateway.adminToken';

let token = sessionStorage.getItem(TOKEN_KEY);

class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error && body.error.message) || `HTTP ${status}`);
    this.status = status;
    this.code = body && body.error && body.error.code;
  }
}

export function hasToken() {
  return Boolean(token);
}

export function useToken(value) {
  token = value;
}

export function keepToken() {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function forgetToken() {
  token = null;
  sessionStorage.removeItem(TOKEN_KEY);
}

export async function api(path) {
  const res = await fetch(path, { headers: { authorization: `Bearer ${token}` }, cache: 'no-store' });
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new ApiError(res.status, body);
  return body;
}

/** Query string of a period and any other parameters, each encoded. */
export function query(params) {
  return Object.entries(params)
    .filter(([, value]) => value !== undefined && value !== null)
    .map(([name, value]) => `${name}=${encodeURIComponent(value)}`)
    .join('&');
}

/** Downloads a file the admin API answers (a CSV statement) under the name it gives: fetched with the token, saved from a blob. */
export async function download(path) {
  const res = await fetch(path, { headers: { authorization: `Bearer ${token}`, accept: 'text/csv' }, cache: 'no-store' });
  if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => null));
  const name = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') || '');
  const url = URL.createObjectURL(await res.blob());
  const link = document.createElement('a');
  link.href = url;
  link.download = name ? name[1] : 'statement.csv';
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}
