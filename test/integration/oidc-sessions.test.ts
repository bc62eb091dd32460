import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  authorizationRequest,
  Browser,
  discover,
  formAction,
  type LiveServer,
  PASSWORD,
  signIn,
  startLiveServer,
  type Tenant,
  tenantKit,
} from '../helpers/oidc-flow.js';

/**
 * A user's sessions and grants, listed and ended by an operator through /v1, seen from a relying
 * party (openid-client) and a browser: what the route ends is refused from the next request on.
 */

let server: LiveServer;
let kit: ReturnType<typeof tenantKit>;
beforeAll(async () => {
  server = await startLiveServer();
  kit = tenantKit(server);
});
afterAll(async () => {
  await server?.close();
});

interface Item {
  kind: 'session' | 'grant';
  id: string;
  created_at: string;
  expires_at: string;
  signed_in_at?: string | null;
  clients?: { client_id: string; grant_id: string | null }[];
  client_id?: string;
  scope?: string;
}

const sessionsPath = (t: Tenant, sub = 'u-ada') =>
  `/v1/workplaces/${t.workplace}/oidc/users/${encodeURIComponent(sub)}/sessions`;

async function listAll(t: Tenant, sub = 'u-ada'): Promise<Item[]> {
  const res = await kit.api('GET', sessionsPath(t, sub));
  expect(res.status, res.text).toBe(200);
  expect(res.body.next).toBeUndefined();
  return res.body.result;
}

/** The whole sign-in of a relying party: code + PKCE, then the code exchanged for tokens. */
async function signedIn(t: Tenant, browser = new Browser()) {
  const config = await discover(t);
  const { url, verifier, state } = await authorizationRequest(config);
  const tokens = await oidc.authorizationCodeGrant(config, await signIn(browser, url), {
    pkceCodeVerifier: verifier,
    expectedState: state,
  });
  return { config, tokens, browser };
}

/** Whether the browser's next authorization asks for the password (its session is gone). */
async function asksForPassword(config: oidc.Configuration, browser: Browser): Promise<boolean> {
  const page = await browser.follow((await authorizationRequest(config)).url.href, server.base);
  return page.page ? (await page.page.text()).includes('Sign in</h1>') : false;
}

/**
 * The provider refuses a token whose grant is gone even while the token's row stays; what was
 * revoked must be gone from storage too, or a later grant check could not be relied upon.
 */
async function rowsOfGrants(grantIds: string[]): Promise<number> {
  const [row] = await server.sql<{ n: number }[]>`
    select count(*)::int as n from oidc_payloads where grant_id = any(${grantIds}) or id = any(${grantIds})`;
  return row?.n ?? -1;
}

async function expectTokensDead(config: oidc.Configuration, tokens: oidc.TokenEndpointResponse) {
  await expect(oidc.refreshTokenGrant(config, tokens.refresh_token as string)).rejects.toMatchObject({
    error: 'invalid_grant',
  });
  const refused = await oidc.fetchUserInfo(config, tokens.access_token, 'u-ada').catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(oidc.WWWAuthenticateChallengeError);
  expect((refused as oidc.WWWAuthenticateChallengeError).response?.status).toBe(401);
}

/** A second user of the tenant's workplace, signed in with a browser of its own. */
async function bobSignedIn(t: Tenant): Promise<void> {
  const docs = [{ _id: 'u-bob', email: 'bob@acme.example' }];
  expect(
    (await kit.api('POST', `/v1/workplaces/${t.workplace}/storages/users/create`, { docs })).status,
  ).toBe(201);
  const pw = { login: 'bob@acme.example', password: PASSWORD };
  expect((await kit.api('POST', `/v1/workplaces/${t.workplace}/oidc/password`, pw)).status).toBe(204);
  const browser = new Browser();
  const config = await discover(t);
  const login = await browser.follow((await authorizationRequest(config)).url.href, server.base);
  const html = await (login.page as Response).text();
  const res = await browser.request(formAction(html, login.url), {
    form: { login: 'bob@acme.example', password: PASSWORD },
  });
  expect(res.status).toBe(303);
  const consent = await browser.follow(
    new URL(res.headers.get('location') as string, login.url).href,
    server.base,
  );
  const consentHtml = await (consent.page as Response).text();
  const allowed = await browser.request(formAction(consentHtml, consent.url), {
    form: { decision: 'allow' },
  });
  expect(allowed.status).toBe(303);
}

describe("listing a user's sessions and grants", () => {
  it('shows each session with its clients and grants, and nothing of other users or workplaces', async () => {
    const t = await kit.newTenant();
    const other = await kit.newTenant();
    expect(await listAll(t)).toEqual([]);
    const before = Date.now() - 2000;
    await signedIn(t);
    await signedIn(t);
    await signedIn(other); // the same subject in another workplace
    await bobSignedIn(t);

    const items = await listAll(t);
    const sessions = items.filter((i) => i.kind === 'session');
    const grants = items.filter((i) => i.kind === 'grant');
    expect(sessions).toHaveLength(2);
    expect(grants).toHaveLength(2);
    for (const s of sessions) {
      expect(s.clients).toHaveLength(1);
      expect(s.clients?.[0]?.client_id).toBe(t.clientId);
      expect(grants.map((g) => g.id)).toContain(s.clients?.[0]?.grant_id);
      expect(Date.parse(s.signed_in_at as string)).toBeGreaterThanOrEqual(before);
    }
    for (const g of grants) {
      expect(g.client_id).toBe(t.clientId);
      expect(g.scope?.split(' ')).toEqual(expect.arrayContaining(['openid', 'email', 'offline_access']));
    }
    for (const i of items) {
      expect(Date.parse(i.created_at)).toBeGreaterThanOrEqual(before);
      expect(Date.parse(i.expires_at)).toBeGreaterThan(Date.parse(i.created_at));
    }
    // Newest first.
    const created = items.map((i) => Date.parse(i.created_at));
    expect(created).toEqual([...created].sort((a, b) => b - a));

    // Bob's are his own, and the other workplace's are its own.
    const bobs = await listAll(t, 'u-bob');
    expect(bobs.map((i) => i.kind).sort()).toEqual(['grant', 'session']);
    expect(bobs.map((i) => i.id).filter((id) => items.some((i) => i.id === id))).toEqual([]);
    const others = await listAll(other);
    expect(others).toHaveLength(2);
    expect(others.map((i) => i.id).filter((id) => items.some((i) => i.id === id))).toEqual([]);

    // Bob's grant and session are not Ada's to end, nor another workplace's.
    const bobGrant = bobs.find((i) => i.kind === 'grant') as Item;
    const bobSession = bobs.find((i) => i.kind === 'session') as Item;
    const wrongGrant = await kit.api(
      'DELETE',
      `/v1/workplaces/${t.workplace}/oidc/users/u-ada/grants/${bobGrant.id}`,
    );
    expect([wrongGrant.status, wrongGrant.body.code]).toEqual([404, 'GRANT_NOT_FOUND']);
    const wrongSession = await kit.api('DELETE', `${sessionsPath(t)}/${bobSession.id}`);
    expect([wrongSession.status, wrongSession.body.code]).toEqual([404, 'SESSION_NOT_FOUND']);
    const elsewhere = await kit.api('DELETE', `${sessionsPath(other, 'u-bob')}`);
    expect([elsewhere.status, elsewhere.body.code]).toEqual([404, 'USER_NOT_FOUND']);
    expect(await listAll(t, 'u-bob')).toHaveLength(2);
  });

  it('pages through them with limit and cursor, each item once', async () => {
    const t = await kit.newTenant();
    for (let i = 0; i < 3; i++) await signedIn(t);
    const all = await listAll(t);
    expect(all).toHaveLength(6);
    const seen: Item[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const query = `?limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const res = await kit.api('GET', `${sessionsPath(t)}${query}`);
      expect(res.status, res.text).toBe(200);
      seen.push(...res.body.result);
      cursor = res.body.next;
      pages++;
    } while (cursor);
    expect(pages).toBe(2);
    expect(seen).toEqual(all);

    for (const bad of ['garbled', Buffer.from('["1","Token","x"]').toString('base64url')]) {
      const res = await kit.api('GET', `${sessionsPath(t)}?cursor=${bad}`);
      expect([res.status, res.body.code]).toEqual([400, 'BAD_REQUEST']);
    }
    const tooMany = await kit.api('GET', `${sessionsPath(t)}?limit=1001`);
    expect([tooMany.status, tooMany.body.code]).toEqual([400, 'VALIDATION_FAILED']);
  });

  it('answers 404 for an unknown workplace, user, session or grant', async () => {
    const t = await kit.newTenant();
    const cases: [string, string, string][] = [
      ['GET', `/v1/workplaces/nosuchplace/oidc/users/u-ada/sessions`, 'WORKPLACE_NOT_FOUND'],
      ['DELETE', `/v1/workplaces/nosuchplace/oidc/users/u-ada/sessions`, 'WORKPLACE_NOT_FOUND'],
      ['GET', sessionsPath(t, 'u-nobody'), 'USER_NOT_FOUND'],
      ['DELETE', sessionsPath(t, 'u-nobody'), 'USER_NOT_FOUND'],
      ['DELETE', `${sessionsPath(t, 'u-nobody')}/abc`, 'USER_NOT_FOUND'],
      ['DELETE', `${sessionsPath(t)}/abc`, 'SESSION_NOT_FOUND'],
      ['DELETE', `/v1/workplaces/${t.workplace}/oidc/users/u-ada/grants/abc`, 'GRANT_NOT_FOUND'],
    ];
    for (const [method, path, code] of cases) {
      const res = await kit.api(method, path);
      expect([method, path, res.status, res.body.code]).toEqual([method, path, 404, code]);
    }
  });
});

describe("ending a user's sessions and grants", () => {
  it('signs the user out everywhere: refresh refused and userinfo 401 at once, the password asked again', async () => {
    const t = await kit.newTenant();
    const one = await signedIn(t);
    const two = await signedIn(t);
    // Refresh works before.
    const refreshed = await oidc.refreshTokenGrant(one.config, one.tokens.refresh_token as string);
    expect((await oidc.fetchUserInfo(one.config, refreshed.access_token, 'u-ada')).sub).toBe('u-ada');
    expect(await asksForPassword(one.config, one.browser)).toBe(false);

    const grantIds = (await listAll(t)).filter((i) => i.kind === 'grant').map((i) => i.id);
    expect(await rowsOfGrants(grantIds)).toBeGreaterThan(0);
    const res = await kit.api('DELETE', sessionsPath(t));
    expect(res.status, res.text).toBe(204);
    expect(await rowsOfGrants(grantIds)).toBe(0);
    await expectTokensDead(one.config, refreshed);
    await expectTokensDead(two.config, two.tokens);
    expect(await listAll(t)).toEqual([]);
    expect(await asksForPassword(one.config, one.browser)).toBe(true);
    expect(await asksForPassword(two.config, two.browser)).toBe(true);
    // Nothing left: again is a 204.
    expect((await kit.api('DELETE', sessionsPath(t))).status).toBe(204);
  });

  it('revokes one grant with its tokens, and leaves the session and the other grants', async () => {
    const t = await kit.newTenant();
    const one = await signedIn(t);
    const two = await signedIn(t);
    const before = await listAll(t);
    // Refresh works before.
    await oidc.refreshTokenGrant(one.config, one.tokens.refresh_token as string);
    const grants = before.filter((i) => i.kind === 'grant');
    expect(grants).toHaveLength(2);
    const revoked: string[] = [];
    for (const g of grants) {
      const res = await kit.api('DELETE', `/v1/workplaces/${t.workplace}/oidc/users/u-ada/grants/${g.id}`);
      expect(res.status, res.text).toBe(204);
      revoked.push(g.id);
      const after = await listAll(t);
      expect(after.filter((i) => i.kind === 'grant').map((i) => i.id)).not.toContain(g.id);
      expect(after.filter((i) => i.kind === 'session')).toHaveLength(2);
      if (revoked.length === 1) {
        // Exactly one of the two sign-ins lost its tokens.
        const alive = await Promise.all(
          [one, two].map((s) =>
            oidc.fetchUserInfo(s.config, s.tokens.access_token, 'u-ada').then(
              () => true,
              () => false,
            ),
          ),
        );
        expect(alive.filter(Boolean)).toHaveLength(1);
      }
    }
    await expectTokensDead(two.config, two.tokens);
    expect(await rowsOfGrants(revoked)).toBe(0);
    // The sessions stay: no password asked.
    expect(await asksForPassword(one.config, one.browser)).toBe(false);
    const again = await kit.api(
      'DELETE',
      `/v1/workplaces/${t.workplace}/oidc/users/u-ada/grants/${grants[0]?.id}`,
    );
    expect([again.status, again.body.code]).toEqual([404, 'GRANT_NOT_FOUND']);
  });

  it('ends one session: that browser signs in again and its tokens die, unless they are offline_access', async () => {
    const t = await kit.newTenant();
    const config = await discover(t);
    // Without offline_access: no refresh token, and the grant ends with the session.
    const browser = new Browser();
    const request = await authorizationRequest(config, { scope: 'openid email profile' });
    const online = await oidc.authorizationCodeGrant(config, await signIn(browser, request.url), {
      pkceCodeVerifier: request.verifier,
      expectedState: request.state,
    });
    const sessionOfOne = (await listAll(t)).find((i) => i.kind === 'session') as Item;
    const two = await signedIn(t);

    const res = await kit.api('DELETE', `${sessionsPath(t)}/${sessionOfOne.id}`);
    expect(res.status, res.text).toBe(204);
    expect(await asksForPassword(config, browser)).toBe(true);
    const refused = await oidc.fetchUserInfo(config, online.access_token, 'u-ada').catch((e: unknown) => e);
    expect((refused as oidc.WWWAuthenticateChallengeError).response?.status).toBe(401);
    const left = await listAll(t);
    expect(left.map((i) => i.id)).not.toContain(sessionOfOne.id);
    expect(left.map((i) => i.id)).not.toContain(sessionOfOne.clients?.[0]?.grant_id);
    expect(left.filter((i) => i.kind === 'session')).toHaveLength(1);

    // The other session lives on.
    expect(await asksForPassword(two.config, two.browser)).toBe(false);
    expect((await oidc.fetchUserInfo(config, two.tokens.access_token, 'u-ada')).sub).toBe('u-ada');

    // With offline_access, the refresh token outlives the session, as it outlives a sign-out.
    const sessionOfTwo = left.find((i) => i.kind === 'session') as Item;
    expect((await kit.api('DELETE', `${sessionsPath(t)}/${sessionOfTwo.id}`)).status).toBe(204);
    expect(await asksForPassword(two.config, two.browser)).toBe(true);
    const refreshed = await oidc.refreshTokenGrant(two.config, two.tokens.refresh_token as string);
    expect((await oidc.fetchUserInfo(two.config, refreshed.access_token, 'u-ada')).sub).toBe('u-ada');
    expect((await listAll(t)).map((i) => i.kind)).toEqual(['grant']);

    const again = await kit.api('DELETE', `${sessionsPath(t)}/${sessionOfOne.id}`);
    expect([again.status, again.body.code]).toEqual([404, 'SESSION_NOT_FOUND']);
  });
});

describe('storage', () => {
  it("finds a user's sessions, grants and tokens through an index, not by reading the table", async () => {
    const plans = await server.sql.begin(async (tx) => {
      await tx`set local enable_seqscan = off`;
      const list = await tx.unsafe(
        `explain select id from oidc_payloads where workplace_id = $1 and (payload ->> 'accountId') = $2
           and model in ('Session', 'Grant')`,
        ['1', 'u-ada'],
      );
      const all = await tx.unsafe(
        `explain delete from oidc_payloads where workplace_id = $1 and (payload ->> 'accountId') = $2`,
        ['1', 'u-ada'],
      );
      return [list, all].map((rows) => rows.map((r) => Object.values(r)[0]).join('\n'));
    });
    for (const plan of plans) expect(plan).toContain('oidc_payloads_by_account');
  });
});
