import type { Sql } from '../db/connection/sql.js';
import type { CollectionRef } from '../db/storage/catalog.js';
import { errors } from '../errors.js';
import type { Filter } from '../mongo/filter/parse.js';
import { bindRule, type RuleKind, type Rules, type RuleVariables } from '../mongo/rules.js';
import { findUserBySubject } from '../oidc/users.js';
import type { Caller } from './types.js';

/** The rules an end user's request runs under, with the variables bound for that caller. */
export interface RuleScope {
  rules: Rules | undefined;
  vars: RuleVariables;
}

/**
 * The scope of a request in collection `c`: undefined for administrators and X-Auth-Tokens, whom
 * rules do not bind. `$$USER` is read only when the rules name it, at every request, so that a
 * change of the profile takes effect on the next one.
 */
export async function ruleScopeOf(
  sql: Sql,
  caller: Caller,
  c: CollectionRef,
): Promise<RuleScope | undefined> {
  if (caller.kind !== 'user') return undefined;
  const user =
    c.rules?.namesUser && !caller.isClient
      ? await findUserBySubject(sql, caller.workplace, caller.usersCollection, caller.sub)
      : undefined;
  return {
    rules: c.rules,
    vars: { AUTH: caller.claims as RuleVariables['AUTH'], USER: user, NOW: new Date().toISOString() },
  };
}

/** The caller's rule of each kind, ANDed; a kind without a rule refuses the request (403). */
export function ruleOf(scope: RuleScope, ...kinds: RuleKind[]): Filter {
  const filters = kinds.map((kind) => {
    const rule = bindRule(scope.rules, kind, scope.vars);
    if (!rule)
      throw errors.forbidden(
        scope.rules
          ? `The collection's rules give end users no ${kind} access.`
          : 'The collection has no rules, so end users may not use it.',
      );
    return rule;
  });
  return filters.length === 1 ? (filters[0] as Filter) : { kind: 'and', children: filters };
}
