import { findOidcSettings, replaceOidcToken, updateOidcSettings } from '../db/oidc-settings.js';
import { errors } from '../errors.js';
import { generateSecret, TOKEN_PREFIX } from '../secrets.js';
import type { Handler, HandlerDeps } from './types.js';

export function oidcSettingsHandlers({ sql }: HandlerDeps) {
  const getOidcSettings: Handler<'getOidcSettings'> = async ({ params }) => {
    const settings = await findOidcSettings(sql, params.name);
    if (!settings) throw errors.workplaceNotFound(params.name);
    return { status: 200, body: { result: settings } };
  };

  const updateOidcSettingsHandler: Handler<'updateOidcSettings'> = async ({ params, body }) => {
    const settings = await updateOidcSettings(sql, params.name, body);
    if (!settings) throw errors.workplaceNotFound(params.name);
    return { status: 200, body: { result: settings } };
  };

  const generateOidcToken: Handler<'generateOidcToken'> = async ({ params }) => {
    const token = generateSecret(TOKEN_PREFIX.oidc);
    if (!(await replaceOidcToken(sql, params.name, token))) throw errors.workplaceNotFound(params.name);
    return { status: 200, body: { result: { token } } };
  };

  return { getOidcSettings, updateOidcSettings: updateOidcSettingsHandler, generateOidcToken };
}
