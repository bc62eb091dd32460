import type { Sql } from '../db/connection/sql.js';
import type { CollectionRef } from '../db/storage/catalog.js';
import type { UpdatePlan } from '../db/storage/documents.js';
import { errors, QueryError } from '../errors.js';
import type { Filter } from '../mongo/filter/parse.js';
import {
  bindRule,
  changedImmutable,
  type RuleKind,
  type Rules,
  type RuleVariables,
  restrict,
  withPresets,
} from '../mongo/rules.js';
import type { JsonObject } from '../mongo/value/json.js';
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
  /** Read `$$USER` whatever `c`'s rules name: other collections' rules apply too ($lookup). */
  alwaysUser = false,
): Promise<RuleScope | undefined> {
  if (caller.kind !== 'user') return undefined;
  const user =
    (alwaysUser || c.rules?.namesUser) && !caller.isClient
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

/**
 * An update plan as an end user runs it: it matches what `read` and `update` admit, its results
 * must satisfy `update` (checked as they are written), immutable fields stay, a replacement keeps
 * the hidden fields and gets the presets, and an upsert's new document gets them and must satisfy
 * `create`. What the request names is checked against the hidden fields first.
 */
export function withinUpdateRules(
  plan: UpdatePlan,
  scope: RuleScope,
  body: { query: unknown; doc: unknown; sort?: unknown; arrayFilters?: unknown },
  replacement: boolean,
): UpdatePlan {
  const { rules, vars } = scope;
  const hidden = rules?.hidden;
  if (hidden?.any) {
    hidden.check(body.query, 'The query');
    hidden.check(body.sort, 'The sort');
    // Update operators read what they change ($min's, $set's modifiedCount, $rename); a
    // replacement is data, and keeps the hidden fields.
    if (!replacement) hidden.check(body.doc, 'The update');
    if (body.arrayFilters !== undefined)
      throw new QueryError('arrayFilters are not available to end users on a collection that hides fields.');
  }
  const { apply, upsert } = plan;
  return {
    ...plan,
    filter: restrict(plan.filter, ruleOf(scope, 'read', 'update')),
    apply: (doc: JsonObject) => {
      const applied = apply(doc);
      const after = replacement
        ? withPresets(hidden?.any ? hidden.keep(doc, applied) : applied, rules, vars)
        : applied;
      const changed = changedImmutable(rules, doc, after);
      if (changed !== undefined)
        throw errors.forbidden(`'${changed}' is immutable for end users; nothing was written.`);
      return after;
    },
    ...(upsert ? { upsert: { ...upsert, document: () => withPresets(upsert.document(), rules, vars) } } : {}),
    checks: {
      update: { kind: 'update', rule: ruleOf(scope, 'update') },
      ...(upsert ? { create: { kind: 'create', rule: ruleOf(scope, 'create') } } : {}),
    },
  };
}
