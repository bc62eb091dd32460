/** The OpenID Provider scenario: its token endpoint, after one sign-in as a browser does it. */
import { createHash, randomBytes } from 'node:crypto';
import { Browser, formAction } from '../../browser.js';
import { type Bench, call } from '../context.js';
import { compare, load } from '../measure.js';

interface Provider {
  issuer: string;
  client: { client_id: string; client_secret: string };
  basic: string;
  login: string;
  password: string;
}

const REDIRECT = 'http://127.0.0.1:9/callback';
const providers = new WeakMap<Bench, Promise<Provider>>();

/** Makes the workplace an OpenID Provider with one user and one client, once per run. */
function provider(bench: Bench): Promise<Provider> {
  let made = providers.get(bench);
  if (!made) {
    made = makeProvider(bench);
    providers.set(bench, made);
  }
  return made;
}

async function makeProvider(bench: Bench): Promise<Provider> {
  const workplace = bench.workplace;
  const api = bench.api.url;
  const login = 'ada@example.com';
  const password = randomBytes(12).toString('base64url');
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
      redirect_uris: [REDIRECT],
      scope: ['email', 'offline_access'],
    }),
  });
  if (reg.status !== 201) throw new Error(`client registration: ${reg.status} ${await reg.text()}`);
  const client = ((await reg.json()) as { result: { client_id: string; client_secret: string } }).result;
  const basic = `Basic ${Buffer.from(
    `${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`,
  ).toString('base64')}`;
  return { issuer: `${api}/oidc/${workplace}`, client, basic, login, password };
}

/**
 * Signs the workplace's user in with the code flow (PKCE) as a browser would, and exchanges the
 * code; `resource` names the API the access token is for (the workplace's issuer: its data routes).
 */
export async function signIn(
  bench: Bench,
  resource?: string,
): Promise<{ tokens: { access_token: string; refresh_token?: string }; tokenUrl: string; basic: string }> {
  const api = bench.api.url;
  const { issuer, client, basic, login, password } = await provider(bench);
  const verifier = randomBytes(32).toString('base64url');
  const auth = new URL(`${issuer}/auth`);
  for (const [k, v] of Object.entries({
    client_id: client.client_id,
    response_type: 'code',
    scope: 'openid email offline_access',
    redirect_uri: REDIRECT,
    state: randomBytes(8).toString('hex'),
    prompt: 'consent',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    ...(resource ? { resource } : {}),
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
  const res = await fetch(tokenUrl, {
    method: 'POST',
    headers,
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
      ...(resource ? { resource } : {}),
    }).toString(),
  });
  const tokens = (await res.json()) as { access_token: string; refresh_token?: string };
  if (!tokens.access_token) throw new Error(`no access token: ${JSON.stringify(tokens)}`);
  return { tokens, tokenUrl, basic };
}

/** A refresh_token grant request of a user who signed in once, to replay. */
async function signInOnce(
  bench: Bench,
): Promise<{ url: string; body: string; headers: Record<string, string> }> {
  const { tokens, tokenUrl, basic } = await signIn(bench);
  if (!tokens.refresh_token) throw new Error(`no refresh token: ${JSON.stringify(tokens)}`);
  return {
    url: tokenUrl,
    body: new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
    }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic },
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
