import * as oidc from 'openid-client';
import { expect } from 'vitest';
import {
  authorizationRequest,
  Browser,
  discover,
  type LiveServer,
  PASSWORD,
  signIn,
  type Tenant,
  type TenantKit,
} from './oidc-flow.js';

/** An end user signed in to a tenant's workplace, with an access token for the workplace's own API. */
export interface EndUser {
  sub: string;
  accessToken: string;
  tokens: oidc.TokenEndpointResponse;
  config: oidc.Configuration;
  browser: Browser;
}

/** Adds a user (`_id` = sub) with a password to the tenant's users collection. */
export async function addUser(kit: TenantKit, t: Tenant, sub: string, extra: Record<string, unknown> = {}) {
  const login = `${sub}@acme.example`;
  const created = await kit.api('POST', `/v1/workplaces/${t.workplace}/storages/users/create`, {
    docs: [{ _id: sub, email: login, ...extra }],
  });
  expect(created.status, created.text).toBe(201);
  const pw = await kit.api('POST', `/v1/workplaces/${t.workplace}/oidc/password`, {
    login,
    password: PASSWORD,
  });
  expect(pw.status, pw.text).toBe(204);
  return login;
}

/**
 * Signs `login` in with code + PKCE and exchanges the code for an access token for the workplace's
 * default audience (`resource` = its issuer), the token its data routes accept.
 */
export async function signInEndUser(
  t: Tenant,
  login: string,
  options: { scope?: string } = {},
): Promise<EndUser> {
  const browser = new Browser();
  const config = await discover(t);
  const { url, verifier, state } = await authorizationRequest(config, {
    resource: t.issuer,
    ...(options.scope ? { scope: options.scope } : {}),
  });
  const tokens = await oidc.authorizationCodeGrant(
    config,
    await signIn(browser, url, PASSWORD, login),
    { pkceCodeVerifier: verifier, expectedState: state },
    { resource: t.issuer },
  );
  const claims = JSON.parse(Buffer.from(tokens.access_token.split('.')[1] ?? '', 'base64url').toString());
  return { sub: claims.sub, accessToken: tokens.access_token, tokens, config, browser };
}

/** Calls the live server with an end user's bearer token (or none). */
export async function asEndUser(
  server: LiveServer,
  token: string | undefined,
  method: string,
  path: string,
  body?: unknown,
) {
  const res = await fetch(`${server.base}${path}`, {
    method,
    headers: {
      ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, text, headers: res.headers };
}
