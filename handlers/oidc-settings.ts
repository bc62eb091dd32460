import { publishedKeyList } from '../db/platform/oidc-provider.js';
import { findOidcSettings, replaceOidcToken, updateOidcSettings } from '../db/platform/oidc-settings.js';
import { findWorkplace } from '../db/platform/workplaces.js';
import { errors } from '../errors.js';
import { generateSigningKey } from '../oidc/keys.js';
import { hashPassword } from '../oidc/passwords.js';
import { RETIRED_KEY_SECONDS } from '../oidc/provider.js';
import { setUserPassword as setPassword } from '../oidc/users.js';
import { generateSecret, TOKEN_PREFIX } from '../secrets.js';
import type { Handler, HandlerDeps } from './types.js';

export function oidcSettingsHandlers({ sql, originsChanged }: HandlerDeps) {
  const getOidcSettings: Handler<'getOidcSettings'> = async ({ params }) => {
    const settings = await findOidcSettings(sql, params.name);
    if (!settings) throw errors.workplaceNotFound(params.name);
    return { status: 200, body: { result: settings } };
  };

  const updateOidcSettingsHandler: Handler<'updateOidcSettings'> = async ({ params, body }) => {
    // As a browser sends Origin, so that a listed origin is one a request can carry.
    for (const origin of body.allowed_origins ?? []) {
      if (URL.parse(origin)?.origin !== origin)
        throw errors.badRequest(
          `allowed_origins: '${origin}' is not an origin as browsers send it (scheme://host, and :port only when it is not the scheme's default).`,
        );
    }
    const settings = await updateOidcSettings(sql, params.name, body);
    if (!settings) throw errors.workplaceNotFound(params.name);
    if (body.allowed_origins) originsChanged?.(params.name);
    return { status: 200, body: { result: settings } };
  };

  const generateOidcToken: Handler<'generateOidcToken'> = async ({ params }) => {
    const token = generateSecret(TOKEN_PREFIX.oidc);
    if (!(await replaceOidcToken(sql, params.name, token))) throw errors.workplaceNotFound(params.name);
    return { status: 200, body: { result: { token } } };
  };

  const setUserPassword: Handler<'setUserPassword'> = async ({ params, body }) => {
    const settings = await findOidcSettings(sql, params.name);
    if (!settings) throw errors.workplaceNotFound(params.name);
    const hash = await hashPassword(body.password);
    const outcome = await setPassword(sql, params.name, settings.collection, body.login, hash);
    switch (outcome) {
      case 'set':
        return { status: 204 };
      case 'no-workplace':
        throw errors.workplaceNotFound(params.name);
      case 'no-collection':
        throw errors.collectionNotFound(settings.collection);
      case 'no-user':
        throw errors.userNotFound(body.login);
      case 'ambiguous':
        throw errors.loginAmbiguous(body.login);
    }
  };

  const rotateSigningKeys: Handler<'rotateSigningKeys'> = async ({ params }) => {
    const workplace = await findWorkplace(sql, params.name);
    if (!workplace) throw errors.workplaceNotFound(params.name);
    await generateSigningKey(sql, workplace.id, true);
    const keys = await publishedKeyList(sql, workplace.id, RETIRED_KEY_SECONDS);
    return {
      status: 200,
      body: {
        result: keys.map((k) => ({
          kid: k.kid,
          alg: 'RS256' as const,
          created_at: k.created_at.toISOString(),
          retired_at: k.retired_at?.toISOString() ?? null,
        })),
      },
    };
  };

  return {
    getOidcSettings,
    updateOidcSettings: updateOidcSettingsHandler,
    generateOidcToken,
    setUserPassword,
    rotateSigningKeys,
  };
}
