import { collectionHandlers } from './collections.js';
import { connectorHandlers } from './connectors.js';
import { documentHandlers } from './documents.js';
import { healthHandlers } from './health.js';
import { indexHandlers } from './indexes.js';
import { oidcClientHandlers } from './oidc-clients.js';
import { oidcSessionHandlers } from './oidc-sessions.js';
import { oidcSettingsHandlers } from './oidc-settings.js';
import { ruleHandlers } from './rules.js';
import { tokenHandlers } from './tokens.js';
import type { HandlerDeps, Handlers } from './types.js';
import { workplaceHandlers } from './workplaces.js';

/** Every operation of openapi.yaml, by operationId. The `Handlers` type makes a gap a type error. */
export function createHandlers(deps: HandlerDeps): Handlers {
  return {
    ...healthHandlers(deps),
    ...workplaceHandlers(deps),
    ...tokenHandlers(deps),
    ...oidcSettingsHandlers(deps),
    ...oidcClientHandlers(deps),
    ...oidcSessionHandlers(deps),
    ...collectionHandlers(deps),
    ...indexHandlers(deps),
    ...ruleHandlers(deps),
    ...documentHandlers(deps),
    ...connectorHandlers(deps),
  };
}
