import type { Sql } from '../db/connection/sql.js';
import { findOidcSettings } from '../db/platform/oidc-settings.js';
import { type CollectionRef, replaceRules } from '../db/storage/catalog.js';
import { type ReadOptions, readDocuments, readStatement, satisfying } from '../db/storage/documents.js';
import { AppError, errors, QueryError } from '../errors.js';
import type { components } from '../generated/openapi.js';
import { parseFilter } from '../mongo/filter/parse.js';
import { bindRule, NO_RULES, parseRules, type RuleKind, restrict, withPresets } from '../mongo/rules.js';
import { canonicalJson } from '../mongo/value/compare.js';
import type { DocumentId, Json, JsonObject } from '../mongo/value/json.js';
import { findUserBySubject } from '../oidc/users.js';
import { updatePlan } from './documents.js';
import { type RuleScope, ruleOf, withinUpdateRules } from './rule-scope.js';
import { requireCollection } from './storage-lookup.js';
import type { Handler, HandlerDeps } from './types.js';

type TestCase = components['schemas']['RulesTestCase'];
type Outcome = components['schemas']['RulesTestOutcome'];

/** The documents a case may list: as many as a read answers by default at most. */
const MAX_CASE_DOCUMENTS = 1000;

/** The rule kinds each operation needs, as the document routes AND them. */
const KINDS: Record<TestCase['operation'], RuleKind[]> = {
  read: ['read'],
  create: ['create'],
  update: ['read', 'update'],
  delete: ['read', 'delete'],
};

/**
 * A rule's top-level clauses (its fields, or the members of a lone `$and`), so that a refusal can
 * name the one that refuses: the first the document does not satisfy.
 */
function clausesOf(rule: JsonObject): JsonObject[] {
  const keys = Object.keys(rule);
  if (keys.length === 1 && keys[0] === '$and' && Array.isArray(rule.$and)) return rule.$and as JsonObject[];
  return keys.map((k) => ({ [k]: rule[k] as Json }));
}

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

  /**
   * The rules' test: each case through the production path (the same binding, restriction and
   * statements as an end user's request, and the write checks' SQL for new documents), on the
   * collection's documents, writing nothing.
   */
  const testCollectionRules: Handler<'testCollectionRules'> = async ({ params, body }) => {
    const stored = await requireCollection(sql, params.name, params.storage_name);
    const c: CollectionRef = body.rules ? { ...stored, rules: parseRules(body.rules) } : stored;
    const users = (await findOidcSettings(sql, params.name))?.collection;
    const cases: Outcome[] = [];
    for (const [i, tc] of body.cases.entries()) {
      try {
        cases.push(await runCase(sql, params.name, users, c, tc));
      } catch (err) {
        if (err instanceof QueryError) throw new QueryError(`cases[${i}]: ${err.message}`);
        throw err;
      }
    }
    const passed = cases.filter((o) => o.passed === true).length;
    const failed = cases.filter((o) => o.passed === false).length;
    return { status: 200, body: { result: { cases, passed, failed } } };
  };

  return { getCollectionRules, replaceCollectionRules, testCollectionRules };
}

async function runCase(
  sql: Sql,
  workplace: string,
  users: string | undefined,
  c: CollectionRef,
  tc: TestCase,
): Promise<Outcome> {
  const rules = c.rules;
  const user =
    (tc.user as JsonObject | undefined) ??
    (rules?.namesUser && users ? await findUserBySubject(sql, workplace, users, tc.auth.sub) : undefined);
  const scope: RuleScope = {
    rules,
    vars: { AUTH: tc.auth as JsonObject, USER: user, NOW: new Date().toISOString() },
  };
  const outcome = await outcomeOf(sql, c, scope, tc);
  return { ...(tc.name !== undefined ? { name: tc.name } : {}), ...outcome, ...judged(tc, outcome) };
}

async function outcomeOf(sql: Sql, c: CollectionRef, scope: RuleScope, tc: TestCase): Promise<Outcome> {
  const kinds = KINDS[tc.operation];
  const missing = kinds.find((k) => !bindRule(scope.rules, k, scope.vars));
  if (missing) return { allowed: false, refused_by: missing };
  const hidden = scope.rules?.hidden;
  if (hidden?.any) hidden.check(tc.query, 'The query');
  const read = (filter: ReadOptions['filter']): ReadOptions => ({
    filter,
    sort: [],
    skip: 0,
    limit: MAX_CASE_DOCUMENTS,
  });
  const matching = (filter: ReadOptions['filter']) => readDocuments(sql, c, read(filter));
  // The statement an end user's read of these documents runs, rule included, as SQL with its
  // placeholders: what the explain of the rules shows.
  const statement = (filter: ReadOptions['filter']) => readStatement(c, read(filter), true).text;
  const ids = (docs: JsonObject[]) => docs.map((d) => d._id as DocumentId);
  switch (tc.operation) {
    case 'read':
    case 'delete': {
      const filter = restrict(parseFilter(tc.query ?? {}), ruleOf(scope, ...kinds));
      return { allowed: true, ids: ids(await matching(filter)), statement: statement(filter) };
    }
    case 'create': {
      const doc = withPresets((tc.doc ?? {}) as JsonObject, scope.rules, scope.vars);
      const [ok] = await satisfying(sql, ruleOf(scope, 'create'), [doc]);
      return ok ? { allowed: true } : refusal(sql, scope, 'create', doc);
    }
    case 'update': {
      const plan = withinUpdateRules(
        updatePlan({ query: tc.query ?? {}, doc: tc.doc ?? {} })(undefined),
        scope,
        { query: tc.query ?? {}, doc: tc.doc ?? {} },
        !Object.keys(tc.doc ?? {}).some((k) => k.startsWith('$')),
      );
      const before = await matching(plan.filter);
      const after: JsonObject[] = [];
      for (const doc of before) {
        try {
          after.push(plan.apply(doc));
        } catch (err) {
          if (err instanceof AppError && err.status === 403) {
            const field = /^'(.+)' is immutable/.exec(err.message)?.[1];
            return { allowed: false, refused_by: 'immutable', ...(field ? { field } : {}), ids: ids([doc]) };
          }
          throw err;
        }
      }
      const oks = await satisfying(sql, ruleOf(scope, 'update'), after);
      const refused = oks.indexOf(false);
      if (refused >= 0) {
        const doc = after[refused] as JsonObject;
        return { ...(await refusal(sql, scope, 'update', doc)), ids: ids([doc]) };
      }
      return { allowed: true, ids: ids(before), statement: statement(plan.filter) };
    }
  }
}

/** A refusal of `doc` by the rule of `kind`, naming the first clause it does not satisfy. */
async function refusal(sql: Sql, scope: RuleScope, kind: RuleKind, doc: JsonObject): Promise<Outcome> {
  const rule = scope.rules?.stored[kind];
  for (const clause of rule ? clausesOf(rule) : []) {
    const bound = bindRule(parseRules({ [kind]: clause }), kind, scope.vars);
    if (bound && !(await satisfying(sql, bound, [doc]))[0])
      return { allowed: false, refused_by: kind, clause };
  }
  return { allowed: false, refused_by: kind, ...(rule ? { clause: rule } : {}) };
}

/** Whether the outcome is the one the case expects; nothing when it expects nothing. */
function judged(tc: TestCase, outcome: Outcome): { passed?: boolean } {
  const expect = tc.expect;
  if (expect === undefined) return {};
  if (expect === 'allow') return { passed: outcome.allowed };
  if (expect === 'deny') return { passed: !outcome.allowed };
  const key = (ids: unknown[]) => ids.map((id) => canonicalJson(id as Json)).sort();
  return {
    passed:
      outcome.allowed &&
      JSON.stringify(key(outcome.ids ?? [])) === JSON.stringify(key(expect.ids as unknown[])),
  };
}
