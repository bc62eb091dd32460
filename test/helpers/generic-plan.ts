import type { ReservedSql } from 'postgres';

/**
 * Finds work that a statement's generic plan repeats for every row although it depends only on
 * bound values: a cast or a function call of parameters (`($3)::jsonb -> (n - 1)`,
 * `mdb.key(($1)::jsonb)`) in an expression evaluated per row. A custom plan folds such an
 * expression into a constant once; the generic plan, which PostgreSQL runs for a prepared
 * statement from its sixth execution on, evaluates it again for each row.
 *
 * Read from EXPLAIN (VERBOSE, FORMAT JSON) of the generic plan: which fields a node evaluates per
 * row, and which once per scan (an index scan's conditions, a function scan's call), unless the
 * node is scanned again for each outer row (the inner side of a nested loop, a subplan that is
 * not hashed). An InitPlan, and a Result with no input, run once per execution: work there is
 * paid once; so is the per-row work of an index scan that finds at most one row by a unique key.
 */
export interface PerRowWork {
  node: string;
  field: string;
  /** The smallest parameter-only expression that does work, as EXPLAIN shows it. */
  expression: string;
}

export interface PlanNode {
  'Node Type': string;
  'Parent Relationship'?: string;
  'Subplan Name'?: string;
  Plans?: PlanNode[];
  [field: string]: unknown;
}

/** Fields a node evaluates for each row it handles. */
const PER_ROW = [
  'Output',
  'Filter',
  'Join Filter',
  'Hash Cond',
  'Merge Cond',
  'Recheck Cond',
  'Sort Key',
  'Presorted Key',
  'Group Key',
  'Hash Key',
  'Cache Key',
];
/** Fields evaluated once each time the node is scanned. */
const PER_SCAN = ['Index Cond', 'Order By', 'Function Call', 'Table Function Call', 'TID Cond'];

/** The generic plan of `text` with `values`, as PostgreSQL runs a prepared statement past its fifth execution. */
export async function genericPlan(conn: ReservedSql, text: string, values: unknown[]): Promise<PlanNode> {
  const name = 'generic_plan_audit';
  await conn.unsafe(`prepare ${name} as ${text}`);
  try {
    await conn.unsafe('set plan_cache_mode = force_generic_plan');
    const args = values.map(literal).join(', ');
    const [row] = await conn.unsafe<{ 'QUERY PLAN': unknown }[]>(
      `explain (verbose, format json) execute ${name}${args ? `(${args})` : ''}`,
    );
    const plan = row?.['QUERY PLAN'];
    return ((typeof plan === 'string' ? JSON.parse(plan) : plan) as [{ Plan: PlanNode }])[0].Plan;
  } finally {
    // Only its own statement: postgres.js still counts on those it prepared on this connection.
    await conn.unsafe(`deallocate ${name}`);
    await conn.unsafe('reset plan_cache_mode');
  }
}

/** A bound value as an SQL literal of unknown type, which EXECUTE coerces to the parameter's type. */
function literal(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  const quote = (s: string) => `'${s.replaceAll("'", "''")}'`;
  if (Buffer.isBuffer(v)) return quote(`\\x${v.toString('hex')}`);
  if (v instanceof Date) return quote(v.toISOString());
  if (typeof v === 'string') return quote(v);
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return quote(String(v));
  return quote(JSON.stringify(v));
}

/** The children a node reads rows from (not its InitPlans and SubPlans). */
function inputs(node: PlanNode): PlanNode[] {
  return (node.Plans ?? []).filter(
    (p) => p['Parent Relationship'] !== 'InitPlan' && p['Parent Relationship'] !== 'SubPlan',
  );
}

/** A Result with no input, or a projection of one: evaluated once per execution. */
function runsOnce(node: PlanNode): boolean {
  const from = inputs(node);
  if (node['Node Type'] === 'Result') return from.every(runsOnce);
  if (node['Node Type'] === 'ProjectSet') return from.every(runsOnce);
  return false;
}

/** Unique indexes, by `schema.name`, with the columns of their keys. */
export type UniqueIndexes = Map<string, string[]>;

/**
 * The database's unique indexes on columns (not expressions), enforced at once (not deferrable):
 * a scan that pins every column of such a key to one value finds at most one row.
 */
export async function uniqueIndexes(conn: ReservedSql): Promise<UniqueIndexes> {
  const rows = await conn.unsafe<{ schema: string; name: string; columns: string[] }[]>(
    `select n.nspname as schema, c.relname as name, array_agg(a.attname::text order by k.n) as columns
     from pg_index i
     join pg_class c on c.oid = i.indexrelid
     join pg_namespace n on n.oid = c.relnamespace
     cross join lateral unnest(i.indkey::int2[]) with ordinality as k (attnum, n)
     left join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum
     where i.indisunique and i.indimmediate and k.n <= i.indnkeyatts
     group by n.nspname, c.relname
     having bool_and(k.attnum > 0)`,
  );
  return new Map(rows.map((r) => [`${r.schema}.${r.name}`, r.columns]));
}

/** `col = $n` or `col = constant`, as an index condition's term reads (`(c.client_id = $1)`). */
const PINNED = /^\(?(?:[a-z_]\w*\.)?([a-z_]\w*) = (?:\$\d+|'(?:[^']|'')*'(?:::[a-z_][\w ]*)?|\d+)\)?$/i;

/**
 * An index scan whose conditions pin every key column of a unique index by equality returns at
 * most one row each time it is scanned (an update or delete by primary key): what it evaluates
 * "per row" is evaluated at most once per scan, as a custom plan would fold it once. Its per-row
 * fields are then searched only where its scan is repeated (see perRowParameterWork).
 */
function atMostOneRow(node: PlanNode, unique: UniqueIndexes): boolean {
  if (node['Node Type'] !== 'Index Scan' && node['Node Type'] !== 'Index Only Scan') return false;
  const columns = unique.get(`${node.Schema}.${node['Index Name']}`);
  const condition = node['Index Cond'];
  if (!columns || typeof condition !== 'string') return false;
  const pinned = new Set<string>();
  for (const term of condition.replace(/^\((.*)\)$/, '$1').split(') AND (')) {
    const m = PINNED.exec(term);
    if (m?.[1]) pinned.add(m[1]);
  }
  return columns.every((c) => pinned.has(c));
}

/**
 * `unique`: the database's unique indexes (uniqueIndexes), so that a scan that finds at most one
 * row is not taken for per-row work; without them, every scan's per-row fields are searched.
 */
export function perRowParameterWork(root: PlanNode, unique: UniqueIndexes = new Map()): PerRowWork[] {
  const all = JSON.stringify(root);
  const found: PerRowWork[] = [];
  const visit = (node: PlanNode, rescanned: boolean) => {
    const once = atMostOneRow(node, unique);
    const fields = runsOnce(node)
      ? []
      : [...(once && !rescanned ? [] : PER_ROW), ...(rescanned ? PER_SCAN : [])];
    for (const field of fields) {
      const value = node[field];
      const texts = Array.isArray(value) ? value : value === undefined ? [] : [value];
      for (const text of texts)
        for (const expression of parameterWork(String(text)))
          found.push({ node: node['Node Type'], field, expression });
    }
    for (const child of node.Plans ?? []) {
      const relation = child['Parent Relationship'];
      const again =
        relation === 'InitPlan'
          ? false
          : relation === 'SubPlan'
            ? !all.includes(`hashed ${child['Subplan Name']}`)
            : rescanned || (relation === 'Inner' && node['Node Type'] === 'Nested Loop');
      visit(child, again);
    }
  };
  visit(root, false);
  return found;
}

/**
 * Set-returning functions: a custom plan cannot fold them either, so calling them per row is the
 * statement's shape, not a cost of its generic plan (their arguments are still searched).
 */
const SETS = new Set([
  'unnest',
  'jsonb_array_elements',
  'jsonb_array_elements_text',
  'jsonb_each',
  'jsonb_path_query',
]);

/** Words of deparsed expressions that are neither columns nor functions. */
const WORDS = new Set(
  'case when then else end and or not is null true false array any all in distinct from like some row'.split(
    ' ',
  ),
);

const CAST_TYPE =
  /^::(?:"[^"]+"|[a-z_][\w.]*)(?: (?:precision|varying|with time zone|without time zone))?(?:\(\d+(?:,\d+)?\))?(?:\[\])*/i;

interface Group {
  start: number;
  /** The function called, for a call. */
  call?: string;
  param: boolean;
  other: boolean;
  work: boolean;
}

const group = (start: number, call?: string): Group => ({
  start,
  ...(call ? { call } : {}),
  param: false,
  other: false,
  work: false,
});

/**
 * The parameter-only expressions of an expression text (as EXPLAIN VERBOSE deparses it) that
 * cast or call something: parenthesized groups and calls holding parameters and constants only.
 */
export function parameterWork(text: string): string[] {
  const found: string[] = [];
  const stack: Group[] = [group(0)];
  const top = () => stack[stack.length - 1] as Group;
  let i = 0;
  /** A cast at position `i` (the end of an operand): consumes it and says whether there was one. */
  const cast = () => {
    const m = CAST_TYPE.exec(text.slice(i));
    if (!m) return false;
    i += m[0].length;
    return true;
  };
  while (i < text.length) {
    const rest = text.slice(i);
    const constant = /^'(?:[^']|'')*'/.exec(rest) ?? /^\d+(?:\.\d+)?(?:e[+-]?\d+)?/i.exec(rest);
    const param = /^(?:\$\d+|\(InitPlan \d+\)\.col\d+)/.exec(rest);
    const name =
      /^(?:hashed )?SubPlan \d+/.exec(rest) ??
      /^(?:"(?:[^"]|"")*"|[a-z_][\w$]*)(?:\.(?:"(?:[^"]|"")*"|[a-z_][\w$]*))*/i.exec(rest);
    if (constant) {
      i += constant[0].length;
      cast(); // a constant's type, folded at planning
    } else if (param) {
      const start = i;
      i += param[0].length;
      top().param = true;
      if (cast()) {
        top().work = true;
        found.push(text.slice(start, i));
      }
    } else if (name) {
      i += name[0].length;
      if (text[i] === '(' && name[0] !== 'ROW') {
        stack.push(group(i - name[0].length, name[0]));
        i++;
      } else if (!WORDS.has(name[0].toLowerCase())) {
        top().other = true;
        cast();
      }
    } else if (rest[0] === '(' || rest[0] === '[') {
      stack.push(group(i));
      i++;
    } else if ((rest[0] === ')' || rest[0] === ']') && stack.length > 1) {
      i++;
      const g = stack.pop() as Group;
      const casted = cast();
      // A call without parameters (count(*), now()) is no constant of the statement.
      if (g.call && !g.param) g.other = true;
      const work = (g.call !== undefined && !SETS.has(g.call)) || casted;
      if (g.param && !g.other && work && !g.work) {
        found.push(text.slice(g.start, i));
        g.work = true;
      }
      const parent = top();
      parent.param ||= g.param;
      parent.other ||= g.other;
      parent.work ||= g.work;
    } else {
      i++;
    }
  }
  return found;
}
