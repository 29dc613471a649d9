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

/** Reads the admin API: its JSON, or its refusal thrown with the status and code. */
export function api(path) {
  return send('GET', path);
}

/**
 * Sends a change to the admin API (a JSON body when there is one) and answers its JSON; a refusal throws the API's own
 * message, with the status and code.
 */
export async function send(method, path, body) {
  const headers = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
  const answer = await res.json().catch(() => null);
  if (!res.ok) throw new ApiError(res.status, answer);
  return answer;
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
