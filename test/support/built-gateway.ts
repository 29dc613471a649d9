import { join } from 'node:path';

const ROOT = join(__dirname, '../..');

/**
 * The gateway as `npm start` runs it: `dist/src/main.js`, which jest's global setup builds from src/ when
 * src/ changed (scripts/build.mjs --if-changed, test/support/global-setup.js). A process started from it
 * boots in ~1.3 s of CPU where ts-node compiled the whole app first (~4.5 s idle, over 10 s for three
 * replicas at once on a 2-core machine), and runs the code that ships.
 */
const GATEWAY_MAIN_JS = join(ROOT, 'dist/src/main.js');

/** The command that starts one gateway process from the project's folder. */
export const GATEWAY_COMMAND: [string, string[]] = [process.execPath, [GATEWAY_MAIN_JS]];
