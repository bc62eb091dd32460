import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Sql } from '../db/connection/sql.js';
import { WORKPLACE_NAME } from '../db/platform/workplaces.js';
import { oidcSignIns } from '../metrics.js';
import { contactsOf } from './extra-client-metadata.js';
import { type ClientView, consentPage, loginPage, messagePage, PAGE_HEADERS } from './pages.js';
import { verifyPassword } from './passwords.js';
import { type ProviderEntry, ProviderRegistry } from './provider.js';
import { accountKey, LoginThrottle } from './throttle.js';
import { findUsersByLogin, subjectOf } from './users.js';

/** The provider's endpoints below the issuer (oidc-provider's default routes, kept as they are). */
export const PROVIDER_PATHS = [
  '/.well-known/openid-configuration',
  '/auth',
  '/token',
  '/me',
  '/jwks',
  '/session/end',
  '/request',
];
const MAX_FORM_BYTES = 16 * 1024;
/** The same answer for an unknown user and a wrong password. */
const WRONG_CREDENTIALS = 'The e-mail, username or password is not correct.';

function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_FORM_BYTES) {
        reject(new Error('form too large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(new URLSearchParams(Buffer.concat(chunks).toString('utf8'))));
    req.on('error', reject);
  });
}

function html(reply: FastifyReply, status: number, body: string) {
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .headers(PAGE_HEADERS)
    .type('text/html; charset=utf-8')
    .send(body);
}

type Interaction = Awaited<ReturnType<ProviderEntry['provider']['interactionDetails']>>;

/** The sign-in the request continues, or undefined once the page saying it expired has been sent. */
async function interactionOf(
  entry: ProviderEntry,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<Interaction | undefined> {
  try {
    return await entry.provider.interactionDetails(request.raw, reply.raw);
  } catch {
    html(
      reply,
      400,
      messagePage(
        'Sign-in expired',
        'This sign-in link is no longer valid. Start again from the application.',
      ),
    );
    return undefined;
  }
}

function clientView(
  client: { clientId: string; metadata(): Record<string, unknown> } | undefined,
): ClientView {
  const metadata = client?.metadata() ?? {};
  const m = metadata as Record<string, string | undefined>;
  return {
    client_id: client?.clientId ?? 'unknown client',
    client_name: m.client_name,
    logo_uri: m.logo_uri,
    tos_uri: m.tos_uri,
    policy_uri: m.policy_uri,
    contacts: contactsOf(metadata),
  };
}

/**
 * The OpenID Provider of every workplace under /oidc/{name}: oidc-provider serves the protocol
 * endpoints (discovery, JWKS, authorization, token, userinfo, revocation, end-session); the
 * sign-in and consent pages are ours. The interface's registration routes, registered elsewhere
 * with static paths, take precedence over the catch-all here.
 */
export async function registerOidcProvider(
  app: FastifyInstance,
  deps: { sql: Sql; providers: ProviderRegistry },
): Promise<void> {
  const registry = deps.providers;
  const throttle = new LoginThrottle(deps.sql);

  async function entryFor(request: FastifyRequest, reply: FastifyReply): Promise<ProviderEntry | undefined> {
    const { name } = request.params as { name: string };
    const entry = WORKPLACE_NAME.test(name) ? await registry.get(name) : undefined;
    if (!entry) {
      reply
        .code(404)
        .type('application/json')
        .send({
          error: 'invalid_request',
          error_description: `There is no OpenID Provider at /oidc/${name}.`,
        });
    }
    return entry;
  }

  await app.register(async (scope) => {
    // The provider reads request bodies itself; leave every body unread for it.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));

    scope.get('/oidc/:name/interaction/:uid', async (request, reply) => {
      const entry = await entryFor(request, reply);
      if (!entry) return reply;
      ProviderRegistry.attach(request.raw, entry);
      const details = await interactionOf(entry, request, reply);
      if (!details) return reply;
      const found = await entry.provider.Client.find(String(details.params.client_id));
      const client = clientView(found);
      const base = `${entry.issuer}/interaction/${details.uid}`;
      if (details.prompt.name === 'login')
        return html(reply, 200, loginPage({ action: `${base}/login`, client }));
      // Only what the client may have: the provider leaves any other requested scope out of the grant.
      const allowed = new Set(String(found?.metadata().scope ?? '').split(' '));
      const scopes = String(details.params.scope ?? 'openid')
        .split(' ')
        .filter((scope) => allowed.has(scope));
      // The APIs the client named; the default audience (the issuer) is the workplace's own.
      const resources = [details.params.resource ?? []]
        .flat()
        .map(String)
        .filter((r) => r !== entry.issuer);
      return html(reply, 200, consentPage({ action: `${base}/confirm`, client, scopes, resources }));
    });

    scope.post('/oidc/:name/interaction/:uid/login', async (request, reply) => {
      const entry = await entryFor(request, reply);
      if (!entry) return reply;
      ProviderRegistry.attach(request.raw, entry);
      const form = await readForm(request.raw).catch(() => new URLSearchParams());
      const details = await interactionOf(entry, request, reply);
      if (!details) return reply;
      const client = clientView(await entry.provider.Client.find(String(details.params.client_id)));
      const action = `${entry.issuer}/interaction/${details.uid}/login`;
      const login = (form.get('login') ?? '').trim().slice(0, 256);
      const password = (form.get('password') ?? '').slice(0, 1024);
      const users = login
        ? await findUsersByLogin(deps.sql, entry.state.workplace, entry.state.collection, login)
        : [];
      const user = users.length === 1 ? users[0] : undefined;
      const account = accountKey(user, login);
      const wait = await throttle.reserve(entry.state.workplaceId, account);
      if (wait > 0) {
        oidcSignIns.inc({ outcome: 'locked_out' });
        reply.header('retry-after', String(wait));
        return html(
          reply,
          429,
          loginPage({
            action,
            client,
            login,
            error: `Too many failed attempts. Try again in ${Math.ceil(wait / 60)} minutes.`,
          }),
        );
      }
      // Verify even when there is no such user, so that both failures take the same time.
      const ok = (await verifyPassword(password, user?.password)) && user !== undefined;
      const subject = user ? subjectOf(user) : undefined;
      if (!ok || subject === undefined) {
        oidcSignIns.inc({ outcome: 'wrong_credentials' });
        return html(reply, 401, loginPage({ action, client, login, error: WRONG_CREDENTIALS }));
      }
      await throttle.succeeded(entry.state.workplaceId, account);
      oidcSignIns.inc({ outcome: 'success' });
      reply.hijack();
      await entry.provider.interactionFinished(
        request.raw,
        reply.raw,
        { login: { accountId: subject } },
        { mergeWithLastSubmission: false },
      );
    });

    scope.post('/oidc/:name/interaction/:uid/confirm', async (request, reply) => {
      const entry = await entryFor(request, reply);
      if (!entry) return reply;
      ProviderRegistry.attach(request.raw, entry);
      const form = await readForm(request.raw).catch(() => new URLSearchParams());
      const { provider } = entry;
      const details = await interactionOf(entry, request, reply);
      if (!details) return reply;
      if (details.prompt.name !== 'consent' || !details.session) {
        return html(reply, 400, messagePage('Nothing to confirm', 'Start again from the application.'));
      }
      if (form.get('decision') !== 'allow') {
        reply.hijack();
        await provider.interactionFinished(
          request.raw,
          reply.raw,
          { error: 'access_denied', error_description: 'The user denied access.' },
          { mergeWithLastSubmission: false },
        );
        return;
      }
      const grant = details.grantId
        ? ((await provider.Grant.find(details.grantId)) ?? undefined)
        : new provider.Grant({
            accountId: details.session.accountId,
            clientId: String(details.params.client_id),
          });
      if (!grant)
        return html(reply, 400, messagePage('Sign-in expired', 'Start again from the application.'));
      const missing = details.prompt.details as {
        missingOIDCScope?: string[];
        missingOIDCClaims?: string[];
        missingResourceScopes?: Record<string, string[]>;
      };
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
      if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
      // The API the access token is for (oidc/resources.ts), with the scopes it may carry there.
      for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
        grant.addResourceScope(indicator, scopes.join(' '));
      }
      const grantId = await grant.save();
      reply.hijack();
      await provider.interactionFinished(
        request.raw,
        reply.raw,
        { consent: { grantId } },
        { mergeWithLastSubmission: true },
      );
    });

    scope.all('/oidc/:name/*', async (request, reply) => {
      const { name } = request.params as { name: string };
      const below = (request.raw.url ?? '').slice(`/oidc/${name}`.length) || '/';
      const path = below.split('?')[0] as string;
      if (!PROVIDER_PATHS.some((p) => path === p || path.startsWith(`${p}/`))) {
        return reply
          .code(404)
          .type('application/json')
          .send({
            error: 'invalid_request',
            error_description: `No route ${request.method} /oidc/${name}${path}.`,
          });
      }
      const entry = await entryFor(request, reply);
      if (!entry) return reply;
      reply.hijack();
      entry.serve(request.raw, reply.raw, below);
    });
  });
}
