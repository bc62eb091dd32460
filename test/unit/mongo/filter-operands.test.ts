/**
 * Comparisons with arrays and documents, `$all` of `$elemMatch`, `$type` and `$mod`: what the
 * parser makes of them and refuses, what the SQL binds, and filter/match.ts's answers on the
 * documents of test/integration/query-operators-cases.ts (the integration test checks the SQL's
 * answers on the same table, so the two evaluators agree).
 */
import { describe, expect, it } from 'vitest';
import { QueryError } from '../../../errors.js';
import { matchFilter } from '../../../mongo/filter/match.js';
import { type Cond, parseFilter } from '../../../mongo/filter/parse.js';
import { compileFilter, type IndexedPath } from '../../../mongo/filter/sql.js';
import type { Json } from '../../../mongo/value/json.js';
import { Params } from '../../../mongo/value/params.js';
import { OPERATOR_CASES, OPERATOR_ERRORS } from '../../integration/query-operators-cases.js';

function compile(query: unknown, indexed: (p: string) => IndexedPath | undefined = () => undefined) {
  const params = new Params();
  const sql = compileFilter(parseFilter(query), { params, indexed });
  return { sql, params: params.values };
}

const condOf = (query: unknown): Cond => {
  const f = parseFilter(query);
  if (f.kind !== 'field') throw new Error('not a field condition');
  return f.cond;
};

describe('parse', () => {
  it.each<[string, unknown, Cond]>([
    ['$gt with an array', { a: { $gt: [2] } }, { op: 'cmp', cmp: '>', value: [2] }],
    ['$lte with a document', { a: { $lte: { x: 1 } } }, { op: 'cmp', cmp: '<=', value: { x: 1 } }],
    ['$gte with the empty array', { a: { $gte: [] } }, { op: 'cmp', cmp: '>=', value: [] }],
    [
      '$lt with a $-keyed document, a plain value',
      { a: { $lt: { $x: 1 } } },
      { op: 'cmp', cmp: '<', value: { $x: 1 } },
    ],
    [
      '$all of $elemMatch: one per element, query or value form',
      { a: { $all: [{ $elemMatch: { b: 1 } }, { $elemMatch: { $gt: 1 } }] } },
      {
        op: 'and',
        conds: [
          {
            op: 'elemMatch',
            filter: { kind: 'field', path: { text: 'b', segments: ['b'] }, cond: { op: 'eq', value: 1 } },
          },
          { op: 'elemMatchValue', cond: { op: 'cmp', cmp: '>', value: 1 } },
        ],
      },
    ],
    ['$all of one value', { a: { $all: [[1]] } }, { op: 'eq', value: [1] }],
    ['$all of nothing', { a: { $all: [] } }, { op: 'none' }],
    [
      '$type codes and aliases',
      { a: { $type: [1, 'int', 18, 'number'] } },
      { op: 'type', types: ['double', 'int', 'long', 'number'] },
    ],
    [
      '$type without a JSON form',
      { a: { $type: ['date', 7, -1, 127] } },
      { op: 'type', types: ['noJsonForm', 'noJsonForm', 'noJsonForm', 'noJsonForm'] },
    ],
    ['$mod truncates', { a: { $mod: [4.9, -1.9] } }, { op: 'mod', divisor: 4, remainder: -1 }],
    [
      '$mod at the 64-bit bounds',
      { a: { $mod: [-(2 ** 63), 2 ** 62] } },
      { op: 'mod', divisor: -(2 ** 63), remainder: 2 ** 62 },
    ],
  ])('%s', (_, query, cond) => {
    expect(condOf(query)).toEqual(cond);
  });
});

describe('parseFilter refuses what MongoDB refuses, in its words', () => {
  it.each(OPERATOR_ERRORS.map(([q, d]) => [JSON.stringify(q), q, d] as const))('%s', (_, query, detail) => {
    const run = () => compile(query);
    expect(run).toThrow(QueryError);
    expect(run).toThrow(detail);
  });
});

describe('filter/match.ts answers as MongoDB', () => {
  it.each(OPERATOR_CASES.map((c) => [c.name, c] as const))('%s', (_, c) => {
    const filter = parseFilter(c.query);
    expect(c.docs.filter((d) => matchFilter(d, filter)).map((d) => d._id)).toEqual(
      c.docs.map((d) => d._id).filter((id) => c.ids.some((x: Json) => x === id)),
    );
  });
});

describe('SQL', () => {
  const everyPathIndexed = (): IndexedPath => ({ key: '"i1_0_a"', truncated: true, multikey: '"i1_0_m"' });

  it.each(OPERATOR_CASES.map((c) => [c.name, c.query] as const))(
    '%s: SQL text is made of our own syntax only',
    (_n, query) => {
      for (const indexed of [undefined, everyPathIndexed]) {
        const { sql } = compile(query, indexed);
        const stripped = sql
          .replace(/\$\d+::(text::jsonb|jsonpath\[\]|jsonpath|jsonb|bigint|bytea|text\[\]|numeric|text)/g, '')
          .replace(/'\\x[0-9a-f]{2}'::bytea|'null'::jsonb/g, '')
          .replace(/"i1_0_[adm]"/g, '');
        expect(stripped).toMatch(/^[a-z_()., =<>\n*'0-9[\]:]*$/);
      }
    },
  );

  it('hostile text in a document or array operand is bound, never in the SQL', () => {
    const s = "'; drop table workplaces; --";
    const { sql, params } = compile({
      a: { $gt: { [s]: s }, $lt: [s] },
      b: { $elemMatch: { $gte: { [s]: [s] }, $eq: { [s]: 1 } } },
    });
    expect(sql).not.toContain('drop');
    expect(params.filter((p) => typeof p === 'string' && p.includes('drop')).length).toBeGreaterThanOrEqual(
      4,
    );
  });

  it('compares documents and arrays with mdb.bson_key, the operand bound as a parameter', () => {
    const { sql, params } = compile({ a: { $gt: { secret: 'x' } } });
    expect(sql).toContain("jsonb_typeof(t1.v) = 'object' and mdb.bson_key(t1.v) > (select mdb.bson_key($");
    expect(sql).not.toContain('secret');
    expect(params).toContain('{"secret":"x"}');
  });

  it('an index narrows an array or document comparison to the type bracket, and reads the documents', () => {
    const idx = (): IndexedPath => ({ key: '"i1_0_a"', truncated: true });
    expect(compile({ a: { $lt: [1] } }, idx).sql).toMatch(
      /^\(\(\("i1_0_a" >= '\\x32'::bytea and "i1_0_a" < '\\x33'::bytea\)\) and exists/,
    );
    const multi = (): IndexedPath => ({ key: '"i1_0_a"', truncated: true, multikey: '"i1_0_m"' });
    expect(compile({ a: { $gte: { x: 1 } } }, multi).sql).toMatch(
      /^\(\(\("i1_0_a" >= '\\x28'::bytea and "i1_0_a" < '\\x29'::bytea\) or "i1_0_m"\) and exists/,
    );
  });

  it('a value-form $elemMatch compares its elements with objects and arrays in SQL', () => {
    const { sql } = compile({ a: { $elemMatch: { $eq: { x: 1 }, $lt: [2] } } });
    expect(sql).toContain('(e1.v = (select $');
    expect(sql).toContain("jsonb_typeof(e1.v) = 'array' and mdb.bson_key(e1.v) < (select mdb.bson_key($");
  });

  it('$mod skips numbers beyond 2^53 in size, whose stored decimals are not their doubles', () => {
    const { sql } = compile({ a: { $mod: [2, 0] } });
    expect(sql).toContain('jsonb_path_match');
    const vars = compile({ a: { $mod: [2, 0] } }).params.find(
      (p) => typeof p === 'string' && p.includes('4503599627370496'),
    );
    expect(vars).toBeDefined();
  });
});
