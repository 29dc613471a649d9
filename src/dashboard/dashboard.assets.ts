import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';

export interface DashboardAsset {
  contentType: string;
  body: Buffer;
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/**
 * The page's static files (index.html, the stylesheet and the script's ES modules), read once at start.
 * They sit beside this module (nest-cli.json copies them into dist); nothing is fetched from a CDN.
 */
export function loadDashboardAssets(dir = join(__dirname, 'assets')): Map<string, DashboardAsset> {
  return new Map(
    readdirSync(dir)
      .filter((name) => CONTENT_TYPES[extname(name)])
      .map((name) => [name, { contentType: CONTENT_TYPES[extname(name)], body: readFileSync(join(dir, name)) }]),
  );
}
