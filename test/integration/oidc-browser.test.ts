import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import * as oidc from 'openid-client';
import { describe, expect, it } from 'vitest';
import { chromiumAvailable, withBrowserAndServer } from '../helpers/chromium.js';
import { PASSWORD, REDIRECT, tenantKit } from '../helpers/oidc-flow.js';

/** Where the run leaves its screenshot of the sign-in page (git-ignored). */
export const SCREENSHOT = fileURLToPath(new URL('../../test-results/oidc-login-page.png', import.meta.url));

const live = withBrowserAndServer();

describe.skipIf(!chromiumAvailable)('signing in with a real browser', () => {
  it('opens the authorization URL, signs in, allows, and lands on the redirect URI with a code', async () => {
    const { newTenant } = tenantKit(live.server);
    const t = await newTenant();
    const config = await oidc.discovery(new URL(t.issuer), t.clientId, t.clientSecret, undefined, {
      execute: [oidc.allowInsecureRequests],
    });
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const authUrl = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid email profile',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });

    const context = await live.browser.newContext();
    const page = await context.newPage();
    // The client's redirect URI is not served by anyone: answer it here and keep its URL.
    let landed: URL | undefined;
    await page.route(`${REDIRECT}**`, async (route) => {
      landed = new URL(route.request().url());
      await route.fulfill({ status: 200, contentType: 'text/plain', body: 'signed in' });
    });
    const external: string[] = [];
    page.on('request', (r) => {
      const url = new URL(r.url());
      if (url.origin !== new URL(live.server.base).origin && !r.url().startsWith(REDIRECT))
        external.push(r.url());
    });

    await page.goto(authUrl.href);
    await expect.poll(() => page.title()).toBe('Sign in');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Sign in');
    await page.getByLabel('E-mail or username').fill('ada@acme.example');
    await page.getByLabel('Password').fill(PASSWORD);
    await mkdir(fileURLToPath(new URL('../../test-results/', import.meta.url)), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(existsSync(SCREENSHOT)).toBe(true);

    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Allow' }).click();
    await expect.poll(() => landed?.href, { timeout: 10_000 }).toBeDefined();

    const callback = landed as URL;
    expect(callback.origin + callback.pathname).toBe(REDIRECT);
    expect(callback.searchParams.get('state')).toBe(state);
    const tokens = await oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    expect(tokens.claims()?.sub).toBe('u-ada');
    // The pages load nothing from anywhere else (the client's logo is not set here).
    expect(external).toEqual([]);
    await context.close();
  });
});
