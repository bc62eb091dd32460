import { replaceRules } from '../db/storage/catalog.js';
import { errors } from '../errors.js';
import { NO_RULES, parseRules } from '../mongo/rules.js';
import { requireCollection } from './storage-lookup.js';
import type { Handler, HandlerDeps } from './types.js';

export function ruleHandlers({ sql, catalog }: HandlerDeps) {
  const getCollectionRules: Handler<'getCollectionRules'> = async ({ params }) => {
    const c = await requireCollection(sql, params.name, params.storage_name);
    return { status: 200, body: { result: c.rules?.stored ?? NO_RULES } };
  };

  const replaceCollectionRules: Handler<'replaceCollectionRules'> = async ({ params, body }) => {
    // Parsed as a request is: a rule the compiler refuses is a 400 now, never at an end user's read.
    const { stored } = parseRules(body);
    const outcome = await replaceRules(sql, params.name, params.storage_name, stored);
    if (!outcome.workplace) throw errors.workplaceNotFound(params.name);
    if (!outcome.found) throw errors.collectionNotFound(params.storage_name);
    catalog.forgetCollection(params.name, params.storage_name);
    return { status: 200, body: { result: stored } };
  };

  return { getCollectionRules, replaceCollectionRules };
}
