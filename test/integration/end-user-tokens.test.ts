import { createPublicKey } from 'node:crypto';
import { importJWK, SignJWT } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addUser, asEndUser, type EndUser, signInEndUser } from '../helpers/end-users.js';
import {
  discover,
  type LiveServer,
  signOut,
  startLiveServer,
  type Tenant,
  tenantKit,
} from '../helpers/oidc-flow.js';

/**
 * The access tokens the data routes accept (issue 45): the workplace's own RS256 at+jwt for its
 * default audience, whose grant is still live. Every other credential is a 401 with RFC 6750's
 * WWW-Authenticate, and a grant that ends stops its tokens on the next request.
 */

let server: LiveServer;
let kit: ReturnType<typeof tenantKit>;
let t: Tenant;
let other: Tenant;
let u1: EndUser;

beforeAll(async () => {
  server = await startLiveServer();
  kit = tenantKit(server);
  [t, other] = [await kit.newTenant(), await kit.newTenant()];
  for (const tenant of [t, other]) {
    await addUser(kit, tenant, 'u1');
    expect(
      (await kit.api('POST', `/v1/workplaces/${tenant.workplace}/storages`, { name: 'notes' })).status,
    ).toBe(201);
    const rules = await kit.api('PUT', `/v1/workplaces/${tenant.workplace}/storages/notes/rules`, {
      read: {},
    });
    expect(rules.status).toBe(200);
  }
  u1 = await signInEndUser(t, 'u1@acme.example');
});
afterAll(async () => {
  await server?.close();
});

const read = (tenant: Tenant, token: string | undefined) =>
  asEndUser(server, token, 'POST', `/v1/workplaces/${tenant.workplace}/storages/notes/read`, {});

/** The workplace's newest signing key, as the provider signs with it. */
async function signingKey(tenant: Tenant) {
  const [row] = await server.sql<{ private_jwk: Record<string, unknown> }[]>`
    select k.private_jwk from oidc_keys k join workplaces w on w.id = k.workplace_id
    where w.name = ${tenant.workplace} and k.retired_at is null order by k.id desc limit 1`;
  const jwk = row?.private_jwk as Record<string, unknown>;
  return { jwk, key: await importJWK(jwk as never, 'RS256') };
}

/** A token signed with the workplace's own key, shaped as `change` says from a valid one's claims. */
async function forged(
  change: { claims?: Record<string, unknown>; typ?: string; alg?: string } = {},
): Promise<string> {
  const { jwk, key } = await signingKey(t);
  const valid = JSON.parse(Buffer.from(u1.accessToken.split('.')[1] as string, 'base64url').toString());
  const claims = { ...valid, ...change.claims };
  for (const [k, v] of Object.entries(claims)) if (v === undefined) delete claims[k];
  return new SignJWT(claims)
    .setProtectedHeader({ alg: change.alg ?? 'RS256', typ: change.typ ?? 'at+jwt', kid: jwk.kid as string })
    .sign(key);
}

function unsigned(claims: Record<string, unknown>): string {
  const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${enc({ alg: 'none', typ: 'at+jwt' })}.${enc(claims)}.`;
}

describe('what the data routes accept', () => {
  it('the workplace’s own access token', async () => {
    const res = await read(t, u1.accessToken);
    expect(res.status, res.text).toBe(200);
  });

  it('no credentials: 401 with WWW-Authenticate: Bearer', async () => {
    const res = await read(t, undefined);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
  });

  it.each([
    ['garbage', async () => 'not-a-token'],
    ['another workplace’s token', async () => (await signInEndUser(other, 'u1@acme.example')).accessToken],
    ['an ID token', async () => u1.tokens.id_token as string],
    ['a refresh token', async () => u1.tokens.refresh_token as string],
    [
      'alg none',
      async () =>
        unsigned(JSON.parse(Buffer.from(u1.accessToken.split('.')[1] as string, 'base64url').toString())),
    ],
    [
      'HS256 keyed with the public key',
      async () => {
        const { jwk } = await signingKey(t);
        const pem = createPublicKey({ key: { kty: 'RSA', n: jwk.n, e: jwk.e } as never, format: 'jwk' })
          .export({ type: 'spki', format: 'pem' })
          .toString();
        const valid = JSON.parse(Buffer.from(u1.accessToken.split('.')[1] as string, 'base64url').toString());
        return new SignJWT(valid)
          .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid: jwk.kid as string })
          .sign(new TextEncoder().encode(pem));
      },
    ],
    ['expired past the skew', () => forged({ claims: { exp: Math.floor(Date.now() / 1000) - 61 } })],
    ['not valid before the skew', () => forged({ claims: { nbf: Math.floor(Date.now() / 1000) + 120 } })],
    ['for another audience', () => forged({ claims: { aud: 'https://api.example.com' } })],
    ['from another issuer', () => forged({ claims: { iss: other.issuer } })],
    ['typ JWT (an ID token’s)', () => forged({ typ: 'JWT' })],
    ['without its grant', () => forged({ claims: { grant_id: undefined } })],
    ['naming a grant that does not exist', () => forged({ claims: { grant_id: 'made-up' } })],
  ])('refuses %s: 401 invalid_token', async (_name, token) => {
    const res = await read(t, await token());
    expect(res.status, res.text).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    expect(res.body.code).toBe('UNAUTHORIZED');
  });

  it('accepts a token expired within the 60 s skew', async () => {
    const res = await read(t, await forged({ claims: { exp: Math.floor(Date.now() / 1000) - 30 } }));
    expect(res.status, res.text).toBe(200);
  });

  it('an X-Auth-Token still decides when both are sent', async () => {
    const res = await fetch(`${server.base}/v1/workplaces/${t.workplace}/storages/notes/read`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-auth-token': 'wrong',
        authorization: `Bearer ${u1.accessToken}`,
      },
      body: '{}',
    });
    expect(res.status).toBe(401);
  });

  it('an end user’s token opens no administration route', async () => {
    const res = await asEndUser(
      server,
      u1.accessToken,
      'GET',
      `/v1/workplaces/${t.workplace}/storages/notes/rules`,
    );
    expect(res.status).toBe(401);
  });
});

describe('a grant that ends stops its tokens on the next request', () => {
  it.each([
    [
      'the refresh token revoked (RFC 7009)',
      async (u: EndUser) => {
        await oidc.tokenRevocation(u.config, u.tokens.refresh_token as string);
      },
    ],
    [
      'the grant revoked by an administrator',
      async (u: EndUser) => {
        const grantId = JSON.parse(
          Buffer.from(u.accessToken.split('.')[1] as string, 'base64url').toString(),
        ).grant_id;
        const res = await kit.api('DELETE', `/v1/workplaces/${t.workplace}/oidc/users/u1/grants/${grantId}`);
        expect(res.status, res.text).toBe(204);
      },
    ],
    [
      'the user signed out (a grant without offline_access)',
      async (u: EndUser) => {
        await signOut(
          u.config,
          u.browser,
          u.tokens.id_token as string,
          'http://127.0.0.1:9/signed-out',
          server.base,
        );
      },
    ],
    [
      'every session of the user ended by an administrator',
      async () => {
        expect((await kit.api('DELETE', `/v1/workplaces/${t.workplace}/oidc/users/u1/sessions`)).status).toBe(
          204,
        );
      },
    ],
  ])('%s', async (_name, end) => {
    const scope = _name.includes('signed out') ? 'openid email' : undefined;
    const u = await signInEndUser(t, 'u1@acme.example', scope ? { scope } : {});
    expect((await read(t, u.accessToken)).status).toBe(200);
    await end(u);
    const res = await read(t, u.accessToken);
    expect(res.status, res.text).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    // Other users' tokens are not affected.
    expect((await read(other, (await signInEndUser(other, 'u1@acme.example')).accessToken)).status).toBe(200);
  });

  it('the client deleted', async () => {
    const tenant = await kit.newTenant();
    await addUser(kit, tenant, 'u1');
    await kit.api('POST', `/v1/workplaces/${tenant.workplace}/storages`, { name: 'notes' });
    await kit.api('PUT', `/v1/workplaces/${tenant.workplace}/storages/notes/rules`, { read: {} });
    const u = await signInEndUser(tenant, 'u1@acme.example');
    expect((await read(tenant, u.accessToken)).status).toBe(200);
    const deleted = await kit.api(
      'DELETE',
      `/oidc/${tenant.workplace}/registration?client_id=${tenant.clientId}`,
      undefined,
      { 'x-auth-token': '', authorizarion: `Bearer ${tenant.oidcToken}` },
    );
    expect(deleted.status, deleted.text).toBe(204);
    expect((await read(tenant, u.accessToken)).status).toBe(401);
  });

  it('in another process, which hears of it through the database', async () => {
    const another = await server.startAnother();
    try {
      const u = await signInEndUser(t, 'u1@acme.example');
      const readThere = () =>
        fetch(`${another.base}/v1/workplaces/${t.workplace}/storages/notes/read`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${u.accessToken}` },
          body: '{}',
        });
      expect((await readThere()).status).toBe(200);
      await oidc.tokenRevocation(u.config, u.tokens.refresh_token as string);
      // The announcement is asynchronous: it arrives within moments, never at the token's exp.
      const deadline = Date.now() + 5000;
      let status = 200;
      while (status === 200 && Date.now() < deadline) {
        status = (await readThere()).status;
        if (status === 200) await new Promise((r) => setTimeout(r, 20));
      }
      expect(status).toBe(401);
    } finally {
      await another.close();
    }
  });
});

describe('JWT access tokens at the provider’s introspection and revocation endpoints', () => {
  it('introspection answers the claims while the grant is live, and active: false after', async () => {
    const u = await signInEndUser(t, 'u1@acme.example');
    const active = await oidc.tokenIntrospection(u.config, u.accessToken);
    expect(active).toMatchObject({
      active: true,
      sub: 'u1',
      client_id: t.clientId,
      iss: t.issuer,
      aud: t.issuer,
    });
    expect(active.token_type).toBe('Bearer');
    await oidc.tokenRevocation(u.config, u.tokens.refresh_token as string);
    expect(await oidc.tokenIntrospection(u.config, u.accessToken)).toEqual({ active: false });
    expect(await oidc.tokenIntrospection(u.config, await forged({ claims: { exp: 1 } }))).toEqual({
      active: false,
    });
  });

  it('revoking the access token ends its grant: the data routes and the refresh token stop', async () => {
    const u = await signInEndUser(t, 'u1@acme.example');
    expect((await read(t, u.accessToken)).status).toBe(200);
    await oidc.tokenRevocation(u.config, u.accessToken);
    expect((await read(t, u.accessToken)).status).toBe(401);
    await expect(oidc.refreshTokenGrant(u.config, u.tokens.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
  });

  it('another client cannot revoke a token it was not issued (200, nothing changes)', async () => {
    const u = await signInEndUser(t, 'u1@acme.example');
    const reg = await kit.api(
      'POST',
      `/oidc/${t.workplace}/oidc/registration`,
      { client_name: 'other', redirect_uris: ['http://127.0.0.1:9/callback'] },
      { 'x-auth-token': '', authorizarion: `Bearer ${t.oidcToken}` },
    );
    const otherClient = await discover({
      issuer: t.issuer,
      clientId: reg.body.result.client_id,
      clientSecret: reg.body.result.client_secret,
    });
    await oidc.tokenRevocation(otherClient, u.accessToken);
    expect((await read(t, u.accessToken)).status).toBe(200);
  });
});

describe('client_credentials tokens act as the client', () => {
  it('their sub is the client_id, which a rule can tell apart', async () => {
    const tenant = await kit.newTenant(
      {},
      { grant_types: ['authorization_code', 'refresh_token', 'client_credentials'] },
    );
    await addUser(kit, tenant, 'u1');
    await kit.api('POST', `/v1/workplaces/${tenant.workplace}/storages`, { name: 'notes' });
    await kit.api('PUT', `/v1/workplaces/${tenant.workplace}/storages/notes/rules`, {
      read: { $expr: { $eq: ['$$AUTH.sub', '$$AUTH.client_id'] } },
    });
    await kit.api('POST', `/v1/workplaces/${tenant.workplace}/storages/notes/create`, { docs: [{ a: 1 }] });
    const config = await discover(tenant);
    const cc = await oidc.clientCredentialsGrant(config, { resource: tenant.issuer });
    const claims = JSON.parse(Buffer.from(cc.access_token.split('.')[1] as string, 'base64url').toString());
    expect(claims.sub).toBe(tenant.clientId);
    const asClient = await read(tenant, cc.access_token);
    expect(asClient.status, asClient.text).toBe(200);
    expect(asClient.body.result).toHaveLength(1);
    const user = await signInEndUser(tenant, 'u1@acme.example');
    expect((await read(tenant, user.accessToken)).body.result).toEqual([]);
  });
});
