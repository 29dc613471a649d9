import { storableText } from '../../common/storable-text';
import { invalidField } from '../../errors';

/**
 * Reading a client's Messages body, which is typed as Anthropic documents it (messages-wire.ts) and checked only
 * where it is read: the client may have sent anything, so each reader checks what it reads and a 400 names the field.
 */

/** The most of a client's text an error message repeats (as models/requested-model.ts quotes a model id). */
const QUOTED_LENGTH = 64;

/** A client's text as an error message quotes it: storable, at most QUOTED_LENGTH units, in JSON quotes. */
export function quoted(text: string): string {
  return JSON.stringify(storableText(text, QUOTED_LENGTH));
}

/** Whether a value the type calls an object is one (not null, not an array): a check, not a narrowing, as the type is right when it holds. */
export function isObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A string field as it came (`name` at `path`); a 400 when it is not a string. */
export function requiredString(value: unknown, name: string, path: string): string {
  if (typeof value !== 'string') throw invalidField(`${path}.${name}`, `${name} must be a string.`);
  return value;
}
