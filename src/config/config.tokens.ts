export const GATEWAY_CONFIG = Symbol('GATEWAY_CONFIG');
export const ENV = Symbol('ENV');
/** The PostgreSQL URL actually in use (the embedded one when DATABASE_URL is unset). */
export const DATABASE_URL = Symbol('DATABASE_URL');
