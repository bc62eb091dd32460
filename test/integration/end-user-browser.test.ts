import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { chromiumAvailable, withBrowserAndServer } from '../helpers/chromium.js';
import { addUser } from '../helpers/end-users.js';
import { PASSWORD, tenantKit } from '../helpers/oidc-flow.js';

/**
 * The worked example of docs/rules.md in a real browser (issue 45): a single-page app, a public
 * client, signs its user in with code + PKCE, exchanges the code from the page, then creates and
 * reads the user's own notes straight from the page (CORS), and cannot read another user's. A
 * page of an origin the workplace does not know cannot call the routes at all.
 */

const live = withBrowserAndServer();

/** A web server for the app's pages (an empty page: the test drives it), on a port of its own. */
async function pageServer(): Promise<{ origin: string; server: Server }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>app</title>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `http://localhost:${(server.address() as AddressInfo).port}`, server };
}

/** What the app's page does once the provider sent the user back with a code. */
async function inTheApp(
  page: Page,
  args: { issuer: string; clientId: string; code: string; verifier: string; api: string; workplace: string },
) {
  return page.evaluate(async (a) => {
    const tokenResponse = await fetch(`${a.issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: a.code,
        code_verifier: a.verifier,
        redirect_uri: `${(globalThis as unknown as { location: { origin: string } }).location.origin}/callback`,
        client_id: a.clientId,
        resource: a.issuer,
      }),
    });
    const tokens = (await tokenResponse.json()) as { access_token: string };
    const call = async (op: string, body: unknown) => {
      const res = await fetch(`${a.api}/v1/workplaces/${a.workplace}/storages/notes/${op}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${tokens.access_token}` },
        body: JSON.stringify(body),
      });
      return {
        status: res.status,
        body: (await res.json()) as { result: { insertedIds: string[] } & unknown[] },
      };
    };
    return {
      token: tokenResponse.status,
      created: await call('create', { docs: [{ text: 'mine' }] }),
      mine: await call('read', {}),
      theirs: await call('read', { query: { owner: 'u2' } }),
      accessToken: tokens.access_token as string,
    };
  }, args);
}

describe.skipIf(!chromiumAvailable)('a browser app of the workplace’s end users', () => {
  it('signs in with PKCE as a public client, writes and reads its own notes, and no one else’s', async () => {
    const app = await pageServer();
    const stranger = await pageServer();
    try {
      await signInAndUseNotes(app.origin, stranger.origin);
    } finally {
      app.server.close();
      stranger.server.close();
    }
  });
});

async function signInAndUseNotes(APP: string, STRANGER: string) {
  {
    const kit = tenantKit(live.server);
    const t = await kit.newTenant(
      {},
      { redirect_uris: [`${APP}/callback`], token_endpoint_auth_method: 'none' },
    );
    await addUser(kit, t, 'u1');
    const notes = `/v1/workplaces/${t.workplace}/storages/notes`;
    expect((await kit.api('POST', `/v1/workplaces/${t.workplace}/storages`, { name: 'notes' })).status).toBe(
      201,
    );
    const own = { $expr: { $eq: ['$owner', '$$AUTH.sub'] } };
    const rules = { read: own, create: {}, update: own, fields: { presets: { owner: '$$AUTH.sub' } } };
    expect((await kit.api('PUT', `${notes}/rules`, rules)).status).toBe(200);
    expect(
      (await kit.api('POST', `${notes}/create`, { docs: [{ owner: 'u2', text: 'theirs' }] })).status,
    ).toBe(201);

    const verifier = randomBytes(32).toString('base64url');
    const auth = new URL(`${t.issuer}/auth`);
    for (const [k, v] of Object.entries({
      client_id: t.clientId,
      response_type: 'code',
      scope: 'openid',
      redirect_uri: `${APP}/callback`,
      state: randomBytes(8).toString('hex'),
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      resource: t.issuer,
    }))
      auth.searchParams.set(k, v);

    const context = await live.browser.newContext();
    const page = await context.newPage();
    await page.goto(auth.href);
    await page.getByLabel('E-mail or username').fill('u1@acme.example');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(`${APP}/callback**`);
    const code = new URL(page.url()).searchParams.get('code') as string;
    expect(code).toBeTruthy();

    const used = await inTheApp(page, {
      issuer: t.issuer,
      clientId: t.clientId,
      code,
      verifier,
      api: live.server.base,
      workplace: t.workplace,
    });
    expect(used.token).toBe(200);
    expect(used.created.status).toBe(201);
    expect(used.mine.body.result).toEqual([
      { _id: used.created.body.result.insertedIds[0], text: 'mine', owner: 'u1' },
    ]);
    expect(used.theirs).toEqual({ status: 200, body: { result: [] } });

    // A page of an origin the workplace does not know: the browser refuses the answer.
    await page.goto(`${STRANGER}/`);
    const refused = await page.evaluate(
      async (a) =>
        fetch(`${a.api}/v1/workplaces/${a.workplace}/storages/notes/read`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${a.token}` },
          body: '{}',
        }).then(
          (r) => `answered ${r.status}`,
          (e: Error) => `refused: ${e.name}`,
        ),
      { api: live.server.base, workplace: t.workplace, token: used.accessToken },
    );
    expect(refused).toBe('refused: TypeError');
    await context.close();
  }
}
