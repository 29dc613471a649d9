import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface DashboardAsset {
  contentType: string;
  body: Buffer;
}

const CONTENT_TYPES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'dashboard.js': 'text/javascript; charset=utf-8',
  'dashboard.css': 'text/css; charset=utf-8',
};

/**
 * The page's static files, read once at start. They sit beside this module (nest-cli.json copies
 * them into dist); nothing is fetched from a CDN.
 */
export function loadDashboardAssets(dir = join(__dirname, 'assets')): Map<string, DashboardAsset> {
  return new Map(
    Object.entries(CONTENT_TYPES).map(([name, contentType]) => [name, { contentType, body: readFileSync(join(dir, name)) }]),
  );
}
