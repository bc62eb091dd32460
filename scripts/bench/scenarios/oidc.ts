/** The OpenID Provider scenario: its token endpoint, after one sign-in as a browser does it. */
import { createHash, randomBytes } from 'node:crypto';
import { Browser, formAction } from '../../browser.js';
import { type Bench, call } from '../context.js';
import { compare, load } from '../measure.js';

/**
 * Makes the workplace an OpenID Provider with one user and one client, signs the user in with the
 * code flow (PKCE) as a browser would, and returns a refresh_token grant request to replay.
 */
async function signInOnce(
  bench: Bench,
): Promise<{ url: string; body: string; headers: Record<string, string> }> {
  const workplace = bench.workplace;
  const api = bench.api.url;
  const login = 'ada@example.com';
  const password = randomBytes(12).toString('base64url');
  const redirect = 'http://127.0.0.1:9/callback';
  await call(bench, 'POST', `/v1/workplaces/${workplace}/storages`, { name: 'users' });
  await call(bench, 'POST', `/v1/workplaces/${workplace}/storages/users/create`, {
    docs: [{ _id: 'u-ada', email: login, email_verified: true, name: 'Ada Lovelace' }],
  });
  await call(bench, 'POST', `/v1/workplaces/${workplace}/oidc/password`, { login, password });
  const settings = (await call(bench, 'GET', `/v1/workplaces/${workplace}/oidc`)) as {
    result: { token: string };
  };
  const reg = await fetch(`${api}/oidc/${workplace}/oidc/registration`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorizarion: `Bearer ${settings.result.token}` },
    body: JSON.stringify({
      client_name: 'bench',
      redirect_uris: [redirect],
      scope: ['email', 'offline_access'],
    }),
  });
  if (reg.status !== 201) throw new Error(`client registration: ${reg.status} ${await reg.text()}`);
  const client = ((await reg.json()) as { result: { client_id: string; client_secret: string } }).result;
  const basic = `Basic ${Buffer.from(
    `${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`,
  ).toString('base64')}`;

  const issuer = `${api}/oidc/${workplace}`;
  const verifier = randomBytes(32).toString('base64url');
  const auth = new URL(`${issuer}/auth`);
  for (const [k, v] of Object.entries({
    client_id: client.client_id,
    response_type: 'code',
    scope: 'openid email offline_access',
    redirect_uri: redirect,
    state: randomBytes(8).toString('hex'),
    prompt: 'consent',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  }))
    auth.searchParams.set(k, v);
  const browser = new Browser();
  const html = async (r: { page?: Response; url: string }) => {
    if (!r.page) throw new Error(`expected a page at ${r.url}`);
    return r.page.text();
  };
  const loginPage = await browser.follow(auth.href, api);
  const afterLogin = await browser.request(formAction(await html(loginPage), loginPage.url), {
    form: { login, password },
  });
  const consent = await browser.follow(
    new URL(afterLogin.headers.get('location') ?? '', loginPage.url).href,
    api,
  );
  const afterConsent = await browser.request(formAction(await html(consent), consent.url), {
    form: { decision: 'allow' },
  });
  const end = await browser.follow(
    new URL(afterConsent.headers.get('location') ?? '', consent.url).href,
    api,
  );
  const code = end.left?.searchParams.get('code');
  if (!code) throw new Error(`sign-in did not come back with a code: ${end.url}`);

  const tokenUrl = `${issuer}/token`;
  const headers = { 'content-type': 'application/x-www-form-urlencoded', authorization: basic };
  const tokens = await fetch(tokenUrl, {
    method: 'POST',
    headers,
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirect,
      code_verifier: verifier,
    }).toString(),
  });
  const grant = (await tokens.json()) as { refresh_token?: string };
  if (!grant.refresh_token) throw new Error(`no refresh token: ${JSON.stringify(grant)}`);
  return {
    url: tokenUrl,
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: grant.refresh_token }).toString(),
    headers,
  };
}

/** The OpenID Provider's token endpoint: refresh_token grants of a user who signed in once. */
export async function runOidcTokenEndpoint(bench: Bench): Promise<void> {
  const refresh = await signInOnce(bench);
  bench.results.rows.push(
    await compare(
      bench,
      'OIDC token endpoint (refresh_token grant)',
      (warmUp) =>
        load(bench, refresh.url, () => refresh.body, {
          headers: refresh.headers,
          warmUp,
        }),
      undefined,
    ),
  );
}
