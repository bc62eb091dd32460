// The provider's pages and endpoints as an attacker and a strict client see them: no page can be
// framed, discovery lists only what works, failed HTTP Basic authentication is a 401 with its
// challenge, and the pages speak to people.
import { createHash } from 'node:crypto';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  authorizationRequest,
  Browser,
  discover,
  formAction,
  hiddenInputs,
  type LiveServer,
  REDIRECT,
  signInPages,
  startLiveServer,
  type Tenant,
  type TenantKit,
  tenantKit,
} from '../helpers/oidc-flow.js';

let server: LiveServer;
let kit: TenantKit;
let t: Tenant;
beforeAll(async () => {
  server = await startLiveServer();
  kit = tenantKit(server);
  t = await kit.newTenant();
});
afterAll(async () => {
  await server?.close();
});

interface Shown {
  name: string;
  status: number;
  headers: Headers;
  html: string;
}

async function shown(name: string, res: Response): Promise<Shown> {
  return { name, status: res.status, headers: res.headers, html: await res.text() };
}

/** Where a 303 sends the browser, followed until a page is served or the browser leaves. */
async function after(browser: Browser, res: Response, from: string) {
  expect(res.status).toBe(303);
  return browser.follow(new URL(res.headers.get('location') as string, from).href, server.base);
}

/** Every kind of page the provider shows, each fetched as a browser would. */
async function everyPage(): Promise<Shown[]> {
  const config = await discover(t);
  const pages: Shown[] = [];
  const browser = new Browser();

  const wrong = await browser.follow((await authorizationRequest(config)).url.href, server.base);
  const wrongHtml = await (wrong.page as Response).text();
  pages.push(
    await shown(
      'sign-in, wrong password',
      await browser.request(formAction(wrongHtml, wrong.url), { form: { login: 'ada', password: 'nope' } }),
    ),
  );
  const signedIn = await signInPages(browser, (await authorizationRequest(config)).url);
  for (const name of ['login', 'consent'] as const) {
    pages.push({
      name,
      status: 200,
      headers: signedIn[`${name}Headers`] as Headers,
      html: signedIn[`${name}Html`] as string,
    });
  }

  // A response by form_post (the session stands, so consent comes straight away): oidc-provider's
  // page, with the one script that posts it.
  const formPostConsent = await browser.follow(
    (await authorizationRequest(config, { response_mode: 'form_post' })).url.href,
    server.base,
  );
  const formPostHtml = await (formPostConsent.page as Response).text();
  const allowed = await browser.request(formAction(formPostHtml, formPostConsent.url), {
    form: { decision: 'allow' },
  });
  pages.push(
    await shown('form_post response', (await after(browser, allowed, formPostConsent.url)).page as Response),
  );

  pages.push(
    await shown('expired sign-in', await browser.request(`${t.issuer}/interaction/no-such-interaction`)),
  );
  const unknownClient = (await authorizationRequest(config)).url.href.replace(t.clientId, 'no-such-client');
  pages.push(await shown('authorization error', await browser.request(unknownClient)));

  const logout = await browser.request(`${t.issuer}/session/end?client_id=${t.clientId}`);
  const logoutPage = await shown('sign-out', logout);
  pages.push(logoutPage);
  const confirmed = await browser.request(formAction(logoutPage.html, logout.url), {
    form: { ...hiddenInputs(logoutPage.html), logout: 'yes' },
  });
  pages.push(await shown('signed out', (await after(browser, confirmed, logout.url)).page as Response));
  return pages;
}

describe('the pages', () => {
  let pages: Shown[];
  beforeAll(async () => {
    pages = await everyPage();
  });

  it('are all HTML that no other site can frame', () => {
    expect(pages.map((p) => p.name)).toHaveLength(8);
    for (const { name, headers, html } of pages) {
      expect(headers.get('content-type'), name).toMatch(/^text\/html/);
      expect(html, name).toMatch(/^<!DOCTYPE html>/i);
      expect(headers.get('x-frame-options'), name).toBe('DENY');
      expect(headers.get('content-security-policy'), name).toMatch(/frame-ancestors 'none'/);
    }
  });

  it("let the form_post page's own script run, and no other", () => {
    const { headers, html } = pages.find((p) => p.name === 'form_post response') as Shown;
    expect(html).toContain(REDIRECT);
    expect(html).toMatch(/<script/);
    // Exactly that script's hash: no 'self', no other source.
    const script = /<script>([\s\S]*?)<\/script>/.exec(html)?.[1] as string;
    const hash = createHash('sha256').update(script).digest('base64');
    const csp = headers.get('content-security-policy') as string;
    expect(/script-src ([^;]*)/.exec(csp)?.[1]).toBe(`'sha256-${hash}'`);
    for (const other of pages.filter((p) => p.name !== 'form_post response')) {
      expect(other.html, other.name).not.toMatch(/<script/i);
      // No script may run on the others, from anywhere.
      const policy = other.headers.get('content-security-policy') as string;
      expect(/script-src ([^;]*)/.exec(policy)?.[1], other.name).toBe("'none'");
    }
  });

  it('ask for consent in words, not scope names', () => {
    const { html } = pages.find((p) => p.name === 'consent') as Shown;
    const items = [...html.matchAll(/<li>([^<]*)<\/li>/g)].map((m) => m[1]);
    expect(items).toEqual([
      'Know who you are when you sign in',
      'Your e-mail address and whether it is verified',
      'Your profile: name, nickname, username, picture, website, gender, birthdate, time zone and locale',
      'Keep access while you are not using it (until you sign out or it expires)',
    ]);
  });

  it('ask only for what the client may be granted', async () => {
    const { url } = await authorizationRequest(await discover(t), { scope: 'openid email scope-of-nobody' });
    const { consentHtml } = await signInPages(new Browser(), url);
    expect([...(consentHtml as string).matchAll(/<li>([^<]*)<\/li>/g)].map((m) => m[1])).toEqual([
      'Know who you are when you sign in',
      'Your e-mail address and whether it is verified',
    ]);
  });

  it('name the application on the sign-out page, not a host', () => {
    const { html } = pages.find((p) => p.name === 'sign-out') as Shown;
    expect(html).toContain('Do you want to sign out of Acme portal?');
    expect(html).not.toMatch(/sign out of [^<]*127\.0\.0\.1/);
  });
});

describe('discovery', () => {
  it('lists only the client authentication methods a registered client can use', async () => {
    const meta = (await discover(t)).serverMetadata();
    // Confidential clients with either secret method, public clients with none (each works end
    // to end in oidc-public-clients.test.ts).
    const methods = ['client_secret_basic', 'client_secret_post', 'none'];
    expect(meta.token_endpoint_auth_methods_supported).toEqual(methods);
    // No JWT client authentication, so no algorithms for it either.
    expect(meta.token_endpoint_auth_signing_alg_values_supported).toBeUndefined();
    // Introspection answers confidential clients only (oidc-tokens.test.ts), so it lists no none.
    for (const [name, value] of Object.entries(meta)) {
      if (name.endsWith('_auth_methods_supported'))
        expect(value, name).toEqual(
          name.startsWith('introspection') ? methods.filter((m) => m !== 'none') : methods,
        );
    }
  });

  it('works with both methods it lists', async () => {
    for (const auth of [oidc.ClientSecretBasic(t.clientSecret), oidc.ClientSecretPost(t.clientSecret)]) {
      const config = await oidc.discovery(new URL(t.issuer), t.clientId, undefined, auth, {
        execute: [oidc.allowInsecureRequests],
      });
      // A revocation needs nothing but client authentication: 200 for any token string.
      await expect(oidc.tokenRevocation(config, 'not-a-token')).resolves.toBeUndefined();
    }
  });
});

describe('a failed client authentication by HTTP Basic', () => {
  const basic = (value: string) => `Basic ${Buffer.from(value).toString('base64')}`;
  it.each([
    ['an unknown client', () => basic('no-such-client:secret')],
    ['a wrong secret', () => basic(`${t.clientId}:wpcs_wrong`)],
    ['credentials that are not base64', () => 'Basic !!!'],
    ['no colon', () => basic(t.clientId)],
    ['an empty secret', () => basic(`${t.clientId}:`)],
    ['bad percent-encoding', () => basic(`${t.clientId}:%zz`)],
    ['another scheme', () => `Bearer ${t.clientSecret}`],
    ['no credentials at all', () => 'Basic'],
  ])('is 401 invalid_client with a Basic challenge: %s', async (_label, header) => {
    for (const endpoint of ['token', 'token/revocation']) {
      const res = await fetch(`${t.issuer}/${endpoint}`, {
        method: 'POST',
        headers: { authorization: header(), 'content-type': 'application/x-www-form-urlencoded' },
        body:
          endpoint === 'token'
            ? new URLSearchParams({ grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT })
            : new URLSearchParams({ token: 'x' }),
      });
      expect(res.status, endpoint).toBe(401);
      expect(((await res.json()) as { error: string }).error, endpoint).toBe('invalid_client');
      expect(res.headers.get('www-authenticate'), endpoint).toMatch(
        new RegExp(`^Basic realm="${t.issuer}", error="invalid_client"`),
      );
    }
  });

  it('stays 400 when a client authenticates by two methods at once', async () => {
    const res = await fetch(`${t.issuer}/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${t.clientId}:${t.clientSecret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'x', client_secret: 'y' }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('invalid_request');
  });
});
