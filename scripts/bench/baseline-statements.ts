/**
 * The baseline's statements: the SQL our compiler produces for each scenario the baseline runs,
 * and each variant's bound values, captured once from the compiler itself.
 */
import type postgres from 'postgres';
import { findCollection } from '../../db/storage/catalog.js';
import { countStatement, readStatement } from '../../db/storage/documents.js';
import { parseFilter } from '../../mongo/filter/parse.js';
import { compileFilter } from '../../mongo/filter/sql.js';
import { compileOrderKeys, orderByText, parseSort } from '../../mongo/sort.js';
import { Params } from '../../mongo/value/params.js';
import type { Bench, Captured, Wire } from './context.js';
import { partitions, UPDATE_MATCHES, VARIANTS } from './data.js';
import { READS } from './scenarios/reads.js';
import { findOneAndUpdateBody } from './scenarios/writes.js';

/** A statement's bound value: text, or key bytes (mongo/value/params.ts binds keys as bytea). */
type Bound = string | Buffer;
const wire = (values: Bound[]): Wire[] =>
  values.map((v) => (typeof v === 'string' ? v : { bytea: v.toString('hex') }));

/**
 * The API's read statement as a hand-written server would run it: the page alone, without the
 * ORDER BY keys the API selects for its cursor and the row past the limit that says whether more
 * remain.
 */
function handWrittenRead(st: { text: string; values: Bound[] }): { text: string; values: Bound[] } {
  // A read that pins `_id` already runs as a hand-written server would.
  if (st.text.startsWith('select doc from ')) return st;
  const limit = /limit \$(\d+)(::bigint)?$/.exec(st.text);
  if (!limit || !st.text.startsWith('select doc, ')) throw new Error(`unexpected read statement: ${st.text}`);
  const values = [...st.values];
  const i = Number(limit[1]) - 1;
  values[i] = String(Number(values[i] as string) - 1);
  return { text: st.text.replace(/^select doc, .*? from /, 'select doc from '), values };
}

/**
 * The statements our compiler produces for every scenario the baseline runs, captured once: each
 * read scenario's SQL must be the same for all its variants, which differ only in bound values.
 */
export async function captureStatements(sql: postgres.Sql, bench: Bench): Promise<Captured> {
  const { workplace } = bench;
  const { small: SMALL, large: LARGE } = bench.options;
  const statements: Record<string, string> = {};
  const values = new Map<string, Wire[][]>();
  for (const size of ['small', 'large'] as const) {
    const lookup = await findCollection(sql, workplace, size);
    if (!lookup.workplace || !lookup.found) throw new Error(`no collection ${size}`);
    const c = lookup.found;
    const n = size === 'small' ? SMALL : LARGE;
    for (const s of READS) {
      const vs: Wire[][] = [];
      for (let i = 0; i < VARIANTS; i++) {
        const b = s.body(i, n);
        const filter = parseFilter(b.query);
        const st =
          s.op === 'count'
            ? countStatement(c, filter)
            : handWrittenRead(
                readStatement(c, { filter, sort: parseSort(b.sort), skip: 0, limit: b.limit ?? 100 }),
              );
        const key = `${size}:${s.name}`;
        if (statements[key] !== undefined && statements[key] !== st.text)
          throw new Error(`${key}: the SQL varies`);
        statements[key] = st.text;
        vs.push(wire(st.values));
      }
      values.set(`${size}:${s.name}`, vs);
    }
    if (size === 'large') {
      // updateMany: the compiler's WHERE, and the change as one SQL UPDATE.
      const vs: Wire[][] = [];
      for (let k = 0; k < VARIANTS; k++) {
        const st = countStatement(c, parseFilter({ bucket: k % partitions(LARGE, UPDATE_MATCHES) }));
        const where = st.text.slice(st.text.indexOf(' where ') + 7);
        statements.update = `update ${c.table} set doc = jsonb_set(doc, '{n}', to_jsonb(coalesce((doc->>'n')::numeric, 0) + 1)) where ${where}`;
        vs.push(wire(st.values));
      }
      values.set('update', vs);
    }
  }
  const large = await findCollection(sql, workplace, 'large');
  if (!large.workplace || !large.found) throw new Error('no collection large');
  // findOneAndUpdate as one hand-written statement: lock the first match, change it, return it.
  const vs: Wire[][] = [];
  for (let i = 0; i < VARIANTS; i++) {
    const b = findOneAndUpdateBody(i, LARGE);
    // The compiler's WHERE and ORDER BY, as the API's locked read of the first match uses them.
    const params = new Params();
    const where = compileFilter(parseFilter(b.query), { params, indexed: large.found.paths });
    const orderBy = orderByText(compileOrderKeys(parseSort(b.sort), { indexed: large.found.paths }, params));
    const first = `select id from ${large.found.table} where ${where} order by ${orderBy} limit 1`;
    statements.findOneAndUpdate = `update ${large.found.table} set doc = jsonb_set(doc, '{n}', to_jsonb(coalesce((doc->>'n')::numeric, 0) + 1)) where id = (${first} for update) returning jsonb_build_object('_id', doc->'_id', 'n', doc->'n') as doc`;
    vs.push(wire(params.values));
  }
  values.set('findOneAndUpdate', vs);
  const bulk = await findCollection(sql, workplace, 'bulkbase');
  if (!bulk.workplace || !bulk.found) throw new Error('no bulk collection');
  statements.bulk = `insert into ${bulk.found.table} (id, doc) select mdb.key(d -> '_id'), d from jsonb_array_elements($1::text::jsonb) as d`;
  return { statements, values };
}
