import type { Expr } from '../expr/ast.js';
import { compileExpression } from '../expr/sql.js';

import { type Filter, parseFilter } from '../filter/parse.js';
import { compileFilter } from '../filter/sql.js';
import { compileOrderKeys, documentSortKey, orderByText, type SortColumns, type SortKey } from '../sort.js';
import type { Json } from '../value/json.js';
import { type Params, toArrayLiteral } from '../value/params.js';
import { missingPredicate, rootNavs } from '../value/path.js';
import type { Accumulator, Stage } from './parse.js';
import { type SpecNode, type StageProjection, setFieldTree } from './projection.js';

/** Documents one pipeline may answer, and documents in each of a $facet's arrays. */
export const MAX_PIPELINE_RESULTS = 10_000;
/** Groups one $group may make; past this the statement fails with a 400. */
export const MAX_GROUPS = 100_000;

export interface PipelineSource {
  /** The collection's table (from catalog ids). */
  table: string;
  /**
   * The head's read of the collection as a read's statement plans it (db/storage/plan.ts): its
   * WHERE, with its values bound in the pipeline's params, and the key columns its ORDER BY may use.
   */
  plan(filter: Filter): { where: string; columns: SortColumns };
  /** The head's ` limit …` of `count` rows (none when undefined), with the catalog guard it needs. Asked last. */
  limit(count: string | undefined): string;
  /**
   * What $lookup reads of a collection of the same workplace (its table, or a sub-select of the
   * documents the caller may see); undefined when it does not exist or admits the caller to nothing.
   */
  foreign(name: string): string | undefined;
  /**
   * Whether the head's rows are fenced off from the later stages (a MATERIALIZED CTE): an end
   * user's rule is in the head, and no expression of a later stage, which may raise, may run on a
   * row the rule hides, as it could were the planner to push a later condition into the head.
   */
  fenced?: boolean;
}

const NOWHERE = () => undefined;

/**
 * One SELECT for a whole pipeline: each stage is a CTE of `(doc jsonb, n bytea)` rows, `n` being
 * the rows' order (the collection's `_id` order until a $sort, then the sort's position, which
 * $unwind extends by the element's index). The leading $match/$sort/$skip/$limit run over the
 * collection table exactly as a read does, so they use its indexes. The statement answers the
 * result documents in order, one more than MAX_PIPELINE_RESULTS at most.
 */
export function compilePipeline(stages: Stage[], src: PipelineSource, params: Params): string {
  const chain = new Chain(params, src);
  const rest = [...stages];
  let last = chain.head(rest);
  last = chain.stages(rest, last);
  return `with ${chain.ctes.join(',\n')}\nselect doc from ${last} order by n limit ${params.int(MAX_PIPELINE_RESULTS + 1)}`;
}

class Chain {
  readonly ctes: string[] = [];
  #n = 0;
  constructor(
    private readonly params: Params,
    private readonly src: PipelineSource,
  ) {}

  add(sql: string, materialized = false): string {
    const name = `s${this.#n++}`;
    this.ctes.push(`${name} as ${materialized ? 'materialized ' : ''}(${sql})`);
    return name;
  }

  /**
   * The leading $match stages, a $sort and $skip/$limit after them: one read of the collection
   * table, shaped as readStatement's so the planner uses the same indexes. Consumes them from
   * `stages`.
   */
  head(stages: Stage[]): string {
    const filters: Filter[] = [];
    while (stages[0]?.kind === 'match') filters.push((stages.shift() as Stage & { kind: 'match' }).filter);
    let sort: SortKey[] | undefined;
    if (stages[0]?.kind === 'sort') sort = (stages.shift() as Stage & { kind: 'sort' }).keys;
    const window = takeSkipLimit(stages);
    const filter: Filter =
      filters.length === 0
        ? parseFilter({})
        : filters.length === 1
          ? (filters[0] as Filter)
          : { kind: 'and', children: filters };
    const { where, columns } = this.src.plan(filter);
    const ordered = sort !== undefined || window !== undefined;
    const order = ordered ? orderByText(compileOrderKeys(sort ?? [], columns, this.params)) : '';
    const n = sort ? `int8send(row_number() over (order by ${order}))` : 'id';
    return this.add(
      `select doc, ${n} as n from ${this.src.table} where ${where}${ordered ? ` order by ${order}` : ''}${this.window(window, true)}`,
      this.src.fenced,
    );
  }

  /** OFFSET and LIMIT; the head's (`head`) LIMIT carries the catalog guard when it needs one. */
  window(w: Window | undefined, head = false): string {
    const offset = w?.offset ? ` offset ${this.params.int(w.offset)}` : '';
    const count = w?.limit === undefined ? undefined : this.params.int(w.limit);
    if (head) return `${offset}${this.src.limit(count)}`;
    return `${offset}${count === undefined ? '' : ` limit ${count}`}`;
  }

  stages(stages: Stage[], input: string): string {
    let last = input;
    while (stages.length > 0) {
      const stage = stages[0] as Stage;
      if (stage.kind === 'skip' || stage.kind === 'limit') {
        const w = takeSkipLimit(stages) as Window;
        last = this.add(`select doc, n from ${last} order by n${this.window(w)}`);
        continue;
      }
      stages.shift();
      last = this.stage(stage, last);
    }
    return last;
  }

  stage(stage: Stage, p: string): string {
    const params = this.params;
    switch (stage.kind) {
      case 'match':
        return this.add(
          `select doc, n from ${p} where ${compileFilter(stage.filter, { params, indexed: NOWHERE })}`,
        );
      case 'project':
        return this.add(`select ${this.projection(stage.projection, 'doc')} as doc, n from ${p}`);
      case 'sort': {
        const keys = stage.keys.map(
          (k) => `${documentSortKey(k.path, k.dir, params)} ${k.dir === 1 ? 'asc' : 'desc'}`,
        );
        // Ties keep the order the rows came in (a stable sort).
        return this.add(
          `select doc, int8send(row_number() over (order by ${keys.join(', ')}, n)) as n from ${p}`,
        );
      }
      case 'skip':
      case 'limit':
        return p; // taken by stages()
      case 'group':
        return this.group(stage.id, stage.accumulators, p);
      case 'unwind':
        return this.unwind(stage, p);
      case 'count':
        return this.add(
          `select jsonb_build_object(${params.text(stage.field)}, count(*)) as doc, '\\x'::bytea as n from ${p} having count(*) > 0`,
        );
      case 'replaceRoot':
        return this.add(
          `select mdb.agg_new_root(${compileExpression(stage.root, { params, current: 'doc' })}) as doc, n from ${p}`,
        );
      case 'lookup':
        return this.lookup(stage, p);
      case 'facet': {
        const fields = stage.facets.map(([name, sub]) => {
          const out = this.stages([...sub], p);
          const tooMany = params.text(
            `The $facet output '${name}' has more than ${MAX_PIPELINE_RESULTS} documents; narrow its pipeline.`,
          );
          return `${params.text(name)}, (select case when count(*) > ${MAX_PIPELINE_RESULTS} then mdb.agg_error(${tooMany}) else coalesce(jsonb_agg(doc order by n), '[]'::jsonb) end from (select doc, n from ${out} order by n limit ${MAX_PIPELINE_RESULTS + 1}) as f)`;
        });
        return this.add(`select jsonb_build_object(${fields.join(', ')}) as doc, '\\x'::bytea as n`);
      }
    }
  }

  /** SQL of a document projected by a stage projection; `values` overrides the computed SQL. */
  projection(
    p: StageProjection | { mode: StageProjection['mode']; tree: SpecNode },
    doc: string,
    values?: string[],
  ): string {
    const computed =
      values ??
      ('computed' in p
        ? p.computed.map((e) => compileExpression(e, { params: this.params, current: doc }))
        : []);
    const vals = computed.length
      ? `jsonb_build_array(${computed.map((v) => `mdb.agg_wrap(${v})`).join(', ')})`
      : `'[]'::jsonb`;
    return `mdb.agg_project(${doc}, ${this.params.json(p.tree)}, ${vals}, '${p.mode}')`;
  }

  group(id: Expr, accumulators: Accumulator[], p: string): string {
    const params = this.params;
    const args = accumulators.map(
      (a, i) => `${compileExpression(a.arg, { params, current: 'doc' })} as a${i}`,
    );
    // The rows' order only matters to the accumulators that take the first, last or every value.
    const ordered = accumulators.some((a) => a.op === '$first' || a.op === '$last' || a.op === '$push');
    const key = `coalesce(${compileExpression(id, { params, current: 'doc' })}, 'null'::jsonb)`;
    // Strings, the usual group keys, are grouped as text: sorting jsonb values costs twice as much.
    const inner = `select case when jsonb_typeof(k) = 'string' then (k #>> '{}') collate "C" end as ks, case when jsonb_typeof(k) <> 'string' then k end as kj${ordered ? ', n' : ''}${args.map((a) => `, ${a}`).join('')} from (select ${key} as k, * from ${p}) as p`;
    const accs = accumulators.map((a, i) => `${accumulatorSql(a, `a${i}`, params)} as a${i}`);
    const fields = accumulators.map((a, i) => `, ${params.text(a.field)}, g.a${i}`).join('');
    const tooMany = params.text(
      `$group made more than ${MAX_GROUPS} groups; group by fewer distinct values or $match fewer documents first.`,
    );
    const grouped = `select coalesce(to_jsonb(ks), kj) as k${accs.map((a) => `, ${a}`).join('')}, count(*) over () as groups from (${inner}) as s group by ks, kj`;
    return this.add(
      `select jsonb_build_object('_id', g.k${fields}) as doc, int8send(row_number() over (order by mdb.bson_key(g.k))) as n from (${grouped}) as g where mdb.agg_check(g.groups <= ${MAX_GROUPS}, ${tooMany})`,
    );
  }

  unwind(stage: Stage & { kind: 'unwind' }, p: string): string {
    const params = this.params;
    // $unwind's path goes through documents only, never into arrays (MongoDB's getNestedField).
    const value = stage.path.reduce((acc, seg) => `(${acc} -> ${params.text(seg)})`, 'doc');
    const elements = `select e.value as v, e.ordinality - 1 as i from jsonb_array_elements(case when jsonb_typeof(x.v) = 'array' then x.v end) with ordinality as e
      union all select x.v, null where jsonb_typeof(x.v) not in ('array', 'null')${
        stage.preserve
          ? `
      union all select null, null where x.v is null or jsonb_typeof(x.v) = 'null' or x.v = '[]'::jsonb`
          : ''
      }`;
    // The unwound value replaces the array; a preserved empty array leaves the field out, as MongoDB does.
    const path = params.typed(toArrayLiteral(stage.path), 'text[]');
    let doc = `case when u.v is not null then jsonb_set(x.doc, ${path}, u.v) when x.v = '[]'::jsonb then x.doc #- ${path} else x.doc end`;
    if (stage.index) {
      const tree = setFieldTree(stage.index);
      doc = this.projection({ mode: 'add', tree }, `(${doc})`, [`coalesce(to_jsonb(u.i), 'null'::jsonb)`]);
    }
    return this.add(
      `select ${doc} as doc, int8send(row_number() over (order by x.n, u.i)) as n
       from (select doc, n, ${value} as v from ${p}) as x cross join lateral (${elements}) as u`,
    );
  }

  lookup(stage: Stage & { kind: 'lookup' }, p: string): string {
    const params = this.params;
    const tree = setFieldTree(stage.as);
    const foreign = this.src.foreign(stage.from);
    if (foreign === undefined)
      return this.add(
        `select ${this.projection({ mode: 'add', tree }, 'doc', [`'[]'::jsonb`])} as doc, n from ${p}`,
      );
    const elementKeys = (doc: string, which: 'localField' | 'foreignField') => {
      const path = stage[which];
      const missing = missingPredicate(path);
      return `mdb.element_keys(${doc}, ${params.jsonpathArray(rootNavs(path))}, ${missing ? params.jsonpath(missing) : 'null'})`;
    };
    const l = this.add(`select doc, n, row_number() over () as r from ${p}`);
    const matches = `select x.r, jsonb_agg(x.doc order by x.id) as docs from (
        select distinct on (lk.r, f.id) lk.r, f.id, f.doc
        from (select r, unnest(${elementKeys('doc', 'localField')}) as k from ${l}) as lk
        join (select id, doc, unnest(${elementKeys('doc', 'foreignField')}) as k from ${foreign}) as f on f.k = lk.k
      ) as x group by x.r`;
    return this.add(
      `select ${this.projection({ mode: 'add', tree }, 'l.doc', [`coalesce(m.docs, '[]'::jsonb)`])} as doc, l.n
       from ${l} as l left join (${matches}) as m on m.r = l.r`,
    );
  }
}

interface Window {
  offset: number;
  limit?: number;
}

/** Consecutive $skip and $limit stages as one OFFSET/LIMIT; consumes them. */
function takeSkipLimit(stages: Stage[]): Window | undefined {
  let w: Window | undefined;
  for (;;) {
    const s = stages[0];
    if (s?.kind === 'skip') {
      w ??= { offset: 0 };
      w.offset += s.n;
      if (w.limit !== undefined) w.limit = Math.max(0, w.limit - s.n);
    } else if (s?.kind === 'limit') {
      w ??= { offset: 0 };
      w.limit = w.limit === undefined ? s.n : Math.min(w.limit, s.n);
    } else return w;
    stages.shift();
  }
}

/** The aggregate over the group's rows of the accumulator's argument column `a`. */
function accumulatorSql(acc: Accumulator, a: string, params: Params): string {
  const constant = acc.arg.kind === 'literal' ? (acc.arg.value as Json) : undefined;
  switch (acc.op) {
    case '$count':
      return 'to_jsonb(count(*))';
    case '$sum':
      // A constant number ({$sum: 1}) counts: no per-row arithmetic.
      if (typeof constant === 'number')
        return `to_jsonb(count(*) * ${params.typed(JSON.stringify(constant), 'numeric')})`;
      return `to_jsonb(coalesce(sum((${a})::numeric) filter (where jsonb_typeof(${a}) = 'number'), 0))`;
    case '$avg':
      return `to_jsonb((avg((${a})::numeric) filter (where jsonb_typeof(${a}) = 'number'))::float8)`;
    case '$min':
      return `(array_agg(${a} order by mdb.bson_key(${a})) filter (where jsonb_typeof(${a}) <> 'null'))[1]`;
    case '$max':
      return `(array_agg(${a} order by mdb.bson_key(${a}) desc) filter (where jsonb_typeof(${a}) <> 'null'))[1]`;
    case '$first':
      return `(array_agg(coalesce(${a}, 'null'::jsonb) order by n))[1]`;
    case '$last':
      return `(array_agg(coalesce(${a}, 'null'::jsonb) order by n desc))[1]`;
    case '$push':
      return `coalesce(jsonb_agg(${a} order by n) filter (where ${a} is not null), '[]'::jsonb)`;
    case '$addToSet':
      return `coalesce(jsonb_agg(distinct ${a}) filter (where ${a} is not null), '[]'::jsonb)`;
  }
}
