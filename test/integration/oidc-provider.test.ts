import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AFTER_LOGOUT,
  authorizationRequest,
  Browser,
  discover,
  expectEndpointsBelow,
  formAction,
  hiddenInputs,
  type LiveServer,
  PASSWORD,
  REDIRECT,
  signIn,
  startLiveServer,
  type TenantKit,
  tenantKit,
} from '../helpers/oidc-flow.js';

let server: LiveServer;
beforeAll(async () => {
  server = await startLiveServer();
});
afterAll(async () => {
  await server?.close();
});

let api: TenantKit['api'];
let newTenant: TenantKit['newTenant'];
beforeAll(() => {
  ({ api, newTenant } = tenantKit(server));
});

describe('a workplace is an OpenID Provider', () => {
  it('signs a user in: discovery, code + PKCE, tokens, userinfo, refresh, logout', async () => {
    const t = await newTenant({ id_token_timeout: 600, token_timeout: 900, refresh_timeout: 7200 });

    const config = await discover(t);
    const meta = config.serverMetadata();
    expect(meta.issuer).toBe(t.issuer);
    expect(meta.code_challenge_methods_supported).toEqual(['S256']);
    expect(meta.registration_endpoint).toBeUndefined();
    expectEndpointsBelow(meta, t.issuer);

    const browser = new Browser();
    const { url, verifier, state } = await authorizationRequest(config);
    const callback = await signIn(browser, url);
    expect(callback.origin + callback.pathname).toBe(REDIRECT);
    expect(callback.searchParams.get('code')).toBeTruthy();
    // The session cookie belongs to this workplace's path only.
    expect([...browser.jar.cookies.keys()]).toContain(`_session_${t.workplace}`);
    expect(browser.jar.cookies.get(`_session_${t.workplace}`)?.path).toBe(`/oidc/${t.workplace}`);

    const tokens = await oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.expires_in).toBe(900);
    expect(tokens.refresh_token).toBeTruthy();

    // The ID token, verified against the JWKS by an independent library.
    const jwks = createRemoteJWKSet(new URL(meta.jwks_uri as string));
    const { payload, protectedHeader } = await jwtVerify(tokens.id_token as string, jwks, {
      issuer: t.issuer,
      audience: t.clientId,
    });
    expect(protectedHeader.alg).toBe('RS256');
    expect(payload.sub).toBe('u-ada');
    expect((payload.exp as number) - (payload.iat as number)).toBe(600);

    const info = await oidc.fetchUserInfo(config, tokens.access_token, 'u-ada');
    expect(info).toMatchObject({
      sub: 'u-ada',
      email: 'ada@acme.example',
      email_verified: true,
      name: 'Ada Lovelace',
      given_name: 'Ada',
    });
    expect(info).not.toHaveProperty('password');

    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token as string);
    expect(refreshed.access_token).not.toBe(tokens.access_token);
    expect(refreshed.expires_in).toBe(900);
    expect((await oidc.fetchUserInfo(config, refreshed.access_token, 'u-ada')).sub).toBe('u-ada');

    // Revocation (RFC 7009): a revoked refresh token no longer refreshes.
    await oidc.tokenRevocation(config, refreshed.refresh_token as string);
    await expect(oidc.refreshTokenGrant(config, refreshed.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });

    // RP-initiated logout: confirm on the provider's page, land on the registered URI.
    const logoutUrl = oidc.buildEndSessionUrl(config, {
      id_token_hint: tokens.id_token as string,
      post_logout_redirect_uri: AFTER_LOGOUT,
    });
    const confirm = await browser.follow(logoutUrl.href, server.base);
    const confirmHtml = await (confirm.page as Response).text();
    expect(confirmHtml).toContain('Sign out?');
    const done = await browser.request(formAction(confirmHtml, confirm.url), {
      form: { ...hiddenInputs(confirmHtml), logout: 'yes' },
    });
    const landed = await browser.follow(
      new URL(done.headers.get('location') as string, confirm.url).href,
      server.base,
    );
    expect(landed.left?.href).toBe(AFTER_LOGOUT);
    // Signed out: the next authorization asks for the password again.
    const again = await browser.follow((await authorizationRequest(config)).url.href, server.base);
    expect(await (again.page as Response).text()).toContain('Sign in');
  });

  it('answers a wrong password and an unknown user the same way, and throttles repeated failures', async () => {
    const t = await newTenant();
    const config = await discover(t);
    const browser = new Browser();
    const login = await browser.follow((await authorizationRequest(config)).url.href, server.base);
    const action = formAction(await (login.page as Response).text(), login.url);
    const wrong = await browser.request(action, {
      form: { login: 'ada@acme.example', password: 'not the password' },
    });
    const unknown = await browser.request(action, {
      form: { login: 'nobody@acme.example', password: PASSWORD },
    });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    const message = (html: string) => /role="alert">([^<]*)</.exec(html)?.[1];
    expect(message(await wrong.text())).toBe(message(await unknown.text()));

    // Five failures lock the account: one above, four more here.
    for (let i = 0; i < 4; i++) {
      const res = await browser.request(action, { form: { login: 'ada@acme.example', password: 'nope' } });
      expect(res.status).toBe(401);
    }
    const locked = await browser.request(action, { form: { login: 'ada@acme.example', password: 'nope' } });
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
    // Even the right password waits out the lock.
    const right = await browser.request(action, { form: { login: 'ada@acme.example', password: PASSWORD } });
    expect(right.status).toBe(429);
  });

  it('refuses a deleted client at once', async () => {
    const t = await newTenant();
    const config = await discover(t);
    const { url, verifier, state } = await authorizationRequest(config);
    const callback = await signIn(new Browser(), url);
    const del = await api('DELETE', `/oidc/${t.workplace}/registration?client_id=${t.clientId}`, undefined, {
      'x-auth-token': '',
      authorizarion: `Bearer ${t.oidcToken}`,
    });
    expect(del.status).toBe(204);
    await expect(
      oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state }),
    ).rejects.toMatchObject({ error: 'invalid_client' });
  });

  it('refuses a wrong client secret, a reused code and an expired code', async () => {
    const t = await newTenant();
    const config = await discover(t);
    const first = await authorizationRequest(config);
    const browser = new Browser();
    const callback = await signIn(browser, first.url);

    const wrongSecret = await discover(t, 'wpcs_not-the-secret');
    await expect(
      oidc.authorizationCodeGrant(wrongSecret, callback, {
        pkceCodeVerifier: first.verifier,
        expectedState: first.state,
      }),
    ).rejects.toMatchObject({ error: 'invalid_client' });

    await oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: first.verifier,
      expectedState: first.state,
    });
    await expect(
      oidc.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: first.verifier,
        expectedState: first.state,
      }),
    ).rejects.toMatchObject({ error: 'invalid_grant' });

    const second = await authorizationRequest(config, { prompt: 'login' });
    const callback2 = await signIn(browser, second.url);
    // Codes live 60 seconds; age this one in the store rather than wait.
    await server.sql`
      update oidc_payloads set expires_at = now() - interval '1 second', payload = jsonb_set(payload, '{exp}', to_jsonb(extract(epoch from now())::int - 1))
      where model = 'AuthorizationCode'`;
    await expect(
      oidc.authorizationCodeGrant(config, callback2, {
        pkceCodeVerifier: second.verifier,
        expectedState: second.state,
      }),
    ).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it('requires PKCE', async () => {
    const t = await newTenant();
    const config = await discover(t);
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid', state: 'x' });
    const res = await new Browser().follow(url.href, server.base);
    const back = res.left ?? new URL('http://none/');
    expect(back.searchParams.get('error')).toBe('invalid_request');
    expect(back.searchParams.get('error_description')).toMatch(/PKCE/);
  });

  it("does not accept another workplace's tokens", async () => {
    const a = await newTenant();
    const b = await newTenant();
    const configA = await discover(a);
    const configB = await discover(b);
    const { url, verifier, state } = await authorizationRequest(configA);
    const tokens = await oidc.authorizationCodeGrant(configA, await signIn(new Browser(), url), {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    const refused = await oidc.fetchUserInfo(configB, tokens.access_token, 'u-ada').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(oidc.WWWAuthenticateChallengeError);
    expect((refused as oidc.WWWAuthenticateChallengeError).cause[0]?.parameters.error).toBe('invalid_token');
    await expect(oidc.refreshTokenGrant(configB, tokens.refresh_token as string)).rejects.toBeDefined();
    // A's ID token does not verify against B's keys.
    const jwksB = createRemoteJWKSet(new URL(configB.serverMetadata().jwks_uri as string));
    await expect(jwtVerify(tokens.id_token as string, jwksB)).rejects.toBeDefined();
  });

  it('applies new lifetimes to tokens issued after the change', async () => {
    const t = await newTenant({ token_timeout: 900 });
    const config = await discover(t);
    const { url, verifier, state } = await authorizationRequest(config);
    const tokens = await oidc.authorizationCodeGrant(config, await signIn(new Browser(), url), {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    expect(tokens.expires_in).toBe(900);
    expect(
      (await api('POST', `/v1/workplaces/${t.workplace}/oidc`, { token_timeout: 120, id_token_timeout: 300 }))
        .status,
    ).toBe(200);
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token as string);
    expect(refreshed.expires_in).toBe(120);
    const claims = refreshed.claims();
    expect((claims?.exp as number) - (claims?.iat as number)).toBe(300);
  });

  it('rotates signing keys, keeping the old one published', async () => {
    const t = await newTenant();
    const config = await discover(t);
    const first = await authorizationRequest(config);
    const browser = new Browser();
    const before = await oidc.authorizationCodeGrant(config, await signIn(browser, first.url), {
      pkceCodeVerifier: first.verifier,
      expectedState: first.state,
    });
    const oldKid = decodeProtectedHeader(before.id_token as string).kid;

    const rotated = await api('POST', `/v1/workplaces/${t.workplace}/oidc/keys`);
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.body.result).toHaveLength(2);
    expect(rotated.body.result[1]).toMatchObject({ kid: oldKid, retired_at: expect.any(String) });
    expect(rotated.body.result[0].retired_at).toBeNull();

    const second = await authorizationRequest(config, { prompt: 'login' });
    const after = await oidc.authorizationCodeGrant(config, await signIn(browser, second.url), {
      pkceCodeVerifier: second.verifier,
      expectedState: second.state,
    });
    expect(decodeProtectedHeader(after.id_token as string).kid).toBe(rotated.body.result[0].kid);
    const jwks = createRemoteJWKSet(new URL(config.serverMetadata().jwks_uri as string));
    await jwtVerify(before.id_token as string, jwks, {
      issuer: t.issuer,
      audience: t.clientId,
      currentDate: new Date(),
    });
    await jwtVerify(after.id_token as string, jwks, { issuer: t.issuer, audience: t.clientId });
  });

  it('keeps sessions and grants in the database: another server process continues the flow', async () => {
    const t = await newTenant();
    const config = await discover(t);
    const { url, verifier, state } = await authorizationRequest(config);
    const browser = new Browser();
    const callback = await signIn(browser, url);
    const other = await server.startAnother();
    try {
      // The same issuer and database behind another process: the code redeems there.
      const otherConfig = new oidc.Configuration(
        {
          ...config.serverMetadata(),
          token_endpoint: `${other.base}/oidc/${t.workplace}/token`,
        } as unknown as oidc.ServerMetadata,
        t.clientId,
        t.clientSecret,
      );
      oidc.allowInsecureRequests(otherConfig);
      const tokens = await oidc.authorizationCodeGrant(otherConfig, callback, {
        pkceCodeVerifier: verifier,
        expectedState: state,
      });
      expect(tokens.access_token).toBeTruthy();
      // And the browser's session is known there: no password asked.
      const again = await authorizationRequest(config, { prompt: '' });
      const page = await browser.follow(again.url.href.replace(server.base, other.base), other.base);
      if (page.page) expect(await page.page.text()).not.toContain('Sign in</h1>');
    } finally {
      await other.close();
    }
  });

  it('shows the client on the sign-in page and answers 404 for unknown workplaces and routes', async () => {
    const t = await newTenant();
    const config = await discover(t);
    const login = await new Browser().follow((await authorizationRequest(config)).url.href, server.base);
    const html = await (login.page as Response).text();
    expect(login.page?.headers.get('content-security-policy')).toContain("default-src 'none'");
    for (const text of [
      'Acme portal',
      'https://acme.example/tos',
      'https://acme.example/privacy',
      'it@acme.example',
      '<label for="password">',
    ]) {
      expect(html).toContain(text);
    }
    expect(html).not.toMatch(/<script|<link|@import/);
    expect(
      (await fetch(`${server.base}/oidc/nosuchworkplacehere/.well-known/openid-configuration`)).status,
    ).toBe(404);
    expect((await fetch(`${t.issuer}/nothing-here`)).status).toBe(404);
  });
});
