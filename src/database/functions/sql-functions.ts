import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One SQL function's current definition: `<name>.sql` holds its CREATE OR REPLACE FUNCTION statement. */
export interface SqlFunctionFile {
  name: string;
  sql: string;
}

/**
 * The current text of every SQL function of the schema, one file per function in this folder (nest build
 * copies them beside the compiled code: nest-cli.json, assets). Migrations install them from here.
 */
export function sqlFunctionFiles(dir = __dirname): SqlFunctionFile[] {
  const files = readdirSync(dir)
    .filter((file) => file.endsWith('.sql'))
    .sort();
  if (files.length === 0) throw new Error(`No SQL function files in ${dir}: were the .sql assets copied by the build?`);
  return files.map((file) => ({ name: file.slice(0, -'.sql'.length), sql: readFileSync(join(dir, file), 'utf8') }));
}
