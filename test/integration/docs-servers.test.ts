import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LiveServer, startLiveServer } from '../helpers/oidc-flow.js';

/** Debian's Chromium (`apt-get install chromium`); playwright never downloads a browser here. */
const CHROMIUM = '/usr/bin/chromium';

const available = existsSync(CHROMIUM);
// CI installs Chromium (.ci/run); there, a missing browser is a failure, not a reason to skip.
if (!available && process.env.CI) throw new Error(`${CHROMIUM} is missing: apt-get install chromium`);

let server: LiveServer;
let browser: Browser;
beforeAll(async () => {
  if (!available) return;
  server = await startLiveServer();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe.skipIf(!available)('Swagger UI with the contract’s two servers', () => {
  it('offers both, picks the relative one, and so calls the origin it was served from', async () => {
    const page = await browser.newPage();
    await page.goto(`${server.base}/docs/`);
    const select = page.locator('.servers select');
    await select.waitFor({ timeout: 30_000 });
    expect(
      await select.locator('option').evaluateAll((os) => os.map((o) => o.getAttribute('value'))),
    ).toEqual(['/', '{scheme}://{host}']);
    expect(await select.inputValue()).toBe('/');

    const op = page.locator('#operations-Health-getHealth');
    if (!(await op.isVisible())) await page.click('#operations-tag-Health');
    await op.locator('.opblock-summary').click();
    await op.locator('.try-out__btn').click();
    await op.locator('.execute').click();
    const url = op.locator('.request-url pre');
    await url.waitFor({ timeout: 10_000 });
    expect(await url.textContent()).toBe(`${server.base}/healthz`);
    const status = op.locator('.live-responses-table .response .response-col_status');
    expect((await status.first().textContent())?.trim()).toBe('200');
  }, 60_000);
});
