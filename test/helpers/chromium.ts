import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { type LiveServer, startLiveServer } from './oidc-flow.js';

/** Debian's Chromium (`apt-get install chromium`); playwright never downloads a browser here. */
const CHROMIUM = '/usr/bin/chromium';

/** Whether the browser is here; suites that need it skip without it (`describe.skipIf`). */
export const chromiumAvailable = existsSync(CHROMIUM);
// CI installs Chromium (.ci/run); there, a missing browser is a failure, not a reason to skip.
if (!chromiumAvailable && process.env.CI) throw new Error(`${CHROMIUM} is missing: apt-get install chromium`);

/**
 * A live server and a headless Chromium for the file's tests, started before them and closed after;
 * read the two from the returned object inside the tests.
 */
export function withBrowserAndServer(): { server: LiveServer; browser: Browser } {
  const live = {} as { server: LiveServer; browser: Browser };
  beforeAll(async () => {
    if (!chromiumAvailable) return;
    live.server = await startLiveServer();
    live.browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await live.browser?.close();
    await live.server?.close();
  });
  return live;
}
