import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Browser, BrowserContext, chromium, Page } from 'playwright-core';
import { TEST_ADMIN_TOKEN } from './test-app';

/** Screenshots and other artefacts of the browser tests (git-ignored; made by the tests). */
const TEST_OUTPUT_DIR = join(__dirname, '..', '..', 'test-output');

/** Debian's chromium, headless, as CI installs it (.ci/run). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(TEST_OUTPUT_DIR, { recursive: true });
  const path = join(TEST_OUTPUT_DIR, name);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** Signs in with the admin token and opens one account's report for the current UTC month. */
export async function openReport(context: BrowserContext, baseUrl: string, accountId: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${baseUrl}/dashboard#${new URLSearchParams({ account: accountId })}`);
  await page.fill('#admin-token', TEST_ADMIN_TOKEN);
  await page.click('#sign-in-form button[type=submit]');
  const month = new Date().toISOString().slice(0, 7);
  await page.waitForFunction((want) => (globalThis as any).document.body.dataset.loaded === want, `${accountId}/${month}`);
  return page;
}

export interface TableFit {
  table: string;
  scrollWidth: number;
  clientWidth: number;
  overflowX: string;
}

/** Each table's scroll box: how wide its table is against the room the card gives it. */
export function tableFits(page: Page): Promise<TableFit[]> {
  return page.$$eval('.table-scroll', (boxes) =>
    boxes.map((box: any) => ({
      table: box.querySelector('table').id,
      scrollWidth: box.scrollWidth,
      clientWidth: box.clientWidth,
      overflowX: (globalThis as any).getComputedStyle(box).overflowX,
    })),
  );
}

/** The page's own width beyond the viewport (0 when nothing makes the page itself scroll sideways). */
export function pageOverflow(page: Page): Promise<number> {
  return page.evaluate(() => {
    const doc = (globalThis as any).document.documentElement;
    return doc.scrollWidth - doc.clientWidth;
  });
}

export interface Tick {
  value: number;
  text: string;
  y: number;
  height: number;
}

/** The chart's tick labels of one axis, bottom to top, with their place on screen. */
export function axisTicks(page: Page, axis: 'cost' | 'requests'): Promise<Tick[]> {
  return page.$$eval(
    `#daily-chart text[data-axis="${axis}"]`,
    (texts) =>
      texts.map((t: any) => {
        const box = t.getBoundingClientRect();
        return { value: Number(t.dataset.value), text: t.textContent, y: box.top + box.height / 2, height: box.height };
      }),
  );
}
