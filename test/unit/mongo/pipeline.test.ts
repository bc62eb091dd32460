import { describe, expect, it } from 'vitest';
import { compileFilter } from '../../../mongo/filter/sql.js';
import { parsePipeline } from '../../../mongo/pipeline/parse.js';
import { parseProject } from '../../../mongo/pipeline/projection.js';
import { compilePipeline, type PipelineSource } from '../../../mongo/pipeline/sql.js';
import type { SortColumns } from '../../../mongo/sort.js';
import { Params } from '../../../mongo/value/params.js';

// The head's plan as db/storage/plan.ts makes it, without a catalog: `_id`'s column, and one
// index column per other path when `indexed`.
const source = (params: Params, indexed = false): PipelineSource => {
  const columns: SortColumns = {
    indexed: (p) =>
      indexed && p !== '_id'
        ? { key: '"i1_0_a"', truncated: true }
        : p === '_id'
          ? { key: 'id', truncated: false }
          : undefined,
  };
  return {
    table: '"wp_1"."c_1"',
    plan: (filter) => ({ where: compileFilter(filter, { params, indexed: columns.indexed }), columns }),
    limit: (count) => (count === undefined ? '' : ` limit ${count}`),
    foreign: (name) => (name === 'other' ? '"wp_1"."c_2"' : undefined),
  };
};

function compile(pipeline: unknown[], indexed = false) {
  const params = new Params();
  const sql = compilePipeline(parsePipeline(pipeline), source(params, indexed), params);
  return { sql, params: params.values };
}

describe('compilePipeline', () => {
  it('keeps every request value out of the SQL text', () => {
    const hostile = "x'); drop table t; --";
    const { sql, params } = compile([
      { $match: { [hostile]: hostile } },
      { $project: { [hostile]: 1, b: `$${hostile}` } },
      { $addFields: { c: { $literal: hostile } } },
      { $unwind: { path: `$${hostile}`, includeArrayIndex: hostile } },
      { $group: { _id: `$${hostile}`, [hostile]: { $push: `$${hostile}` } } },
      { $sort: { [hostile]: 1 } },
      { $count: hostile },
      { $lookup: { from: hostile, localField: hostile, foreignField: hostile, as: hostile } },
      { $facet: { [hostile]: [{ $replaceWith: { a: `$${hostile}` } }] } },
    ]);
    expect(sql).not.toContain('drop table');
    expect(params.join('\n')).toContain('drop table');
  });

  it('reads the table once, with the leading $match, $sort and window as a read would', () => {
    const { sql } = compile(
      [{ $match: { a: 1 } }, { $sort: { a: -1 } }, { $skip: 2 }, { $limit: 5 }, { $limit: 3 }],
      true,
    );
    expect(sql.match(/"wp_1"\."c_1"/g)).toHaveLength(1);
    expect(sql).toMatch(
      /from "wp_1"\."c_1" where .*"i1_0_a".* order by .* offset \$\d+::bigint limit \$\d+::bigint/,
    );
  });

  it('joins a collection that does not exist as nothing, without naming a table', () => {
    const { sql } = compile([{ $lookup: { from: 'missing', localField: 'a', foreignField: 'b', as: 'j' } }]);
    expect(sql).not.toContain('c_2');
    expect(sql).toContain(`'[]'::jsonb`);
  });
});

describe('parseProject', () => {
  it.each([
    [{ a: 1 }, 'include', { a: true, _id: true }],
    [{ a: 0 }, 'exclude', { a: false }],
    [{ _id: 0, 'a.b': 1 }, 'include', { a: { b: true } }],
    [{ a: { b: '$x' } }, 'include', { a: { b: { $v: 0 }, $c: true }, _id: true }],
    [{ _id: 0 }, 'exclude', { _id: false }],
    [{ _id: 1, a: 0 }, 'exclude', { a: false }],
  ])('%j is a %s projection', (spec, mode, tree) => {
    const p = parseProject(spec);
    expect(p.mode).toBe(mode);
    expect(p.tree).toEqual(tree);
  });
});
