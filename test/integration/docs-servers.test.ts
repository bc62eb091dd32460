import { describe, expect, it } from 'vitest';
import { chromiumAvailable, withBrowserAndServer } from '../helpers/chromium.js';

const live = withBrowserAndServer();

describe.skipIf(!chromiumAvailable)('Swagger UI with the contract’s two servers', () => {
  it('offers both, picks the relative one, and so calls the origin it was served from', async () => {
    const page = await live.browser.newPage();
    await page.goto(`${live.server.base}/docs/`);
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
    expect(await url.textContent()).toBe(`${live.server.base}/healthz`);
    const status = op.locator('.live-responses-table .response .response-col_status');
    expect((await status.first().textContent())?.trim()).toBe('200');
  }, 60_000);
});
