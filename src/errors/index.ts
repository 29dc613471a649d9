export * from './error-code';
export * from './error-catalog';
export * from './gateway-error';
export * from './anthropic-error';
export * from './field-errors';
