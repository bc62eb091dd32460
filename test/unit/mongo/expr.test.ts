// biome-ignore-all lint/suspicious/noThenProperty: MongoDB's $cond and $switch name an argument `then`.
// The expression language's parser and SQL compiler, without a database: operand forms and their
// errors, and the SQL's shape (every request value bound, every argument written once). What the
// operators compute, in SQL and in TypeScript, is test/integration/expressions.test.ts.

import { describe, expect, it } from 'vitest';
import { QueryError } from '../../../errors.js';
import { MAX_EXPRESSION_DEPTH, MAX_EXPRESSION_NODES } from '../../../mongo/expr/ast.js';
import { parseExpression } from '../../../mongo/expr/parse.js';
import { compileExpression } from '../../../mongo/expr/sql.js';
import { parseFilter } from '../../../mongo/filter/parse.js';
import { compileFilter } from '../../../mongo/filter/sql.js';
import { Params } from '../../../mongo/value/params.js';

const parse = (raw: unknown) => parseExpression(raw, '$expr');

describe('operand forms', () => {
  it.each([
    [
      { $abs: '$a' },
      { kind: 'op', op: '$abs', args: [{ kind: 'path', variable: 'CURRENT', segments: ['a'] }] },
    ],
    [
      { $abs: ['$a'] },
      { kind: 'op', op: '$abs', args: [{ kind: 'path', variable: 'CURRENT', segments: ['a'] }] },
    ],
    [
      { $size: [[1, 2]] },
      {
        kind: 'op',
        op: '$size',
        args: [
          {
            kind: 'array',
            items: [
              { kind: 'literal', value: 1 },
              { kind: 'literal', value: 2 },
            ],
          },
        ],
      },
    ],
    [{ $add: [] }, { kind: 'op', op: '$add', args: [] }],
    [
      { $cond: { else: 3, if: true, then: 2 } },
      {
        kind: 'op',
        op: '$cond',
        args: [1, 2, 3].map((v) => ({ kind: 'literal', value: v === 1 ? true : v })),
      },
    ],
    [{ $trim: { input: 'a' } }, { kind: 'op', op: '$trim', args: [{ kind: 'literal', value: 'a' }] }],
    [
      { $switch: { branches: [{ case: true, then: 1 }], default: 2 } },
      { kind: 'op', op: '$switch', args: [true, 1, 2].map((value) => ({ kind: 'literal', value })) },
    ],
    [{ $literal: { $add: 1 } }, { kind: 'literal', value: { $add: 1 } }],
  ])('%j', (raw, expected) => {
    expect(parse(raw)).toEqual(expected);
  });
});

describe('malformed expressions are QueryErrors naming the operator', () => {
  it.each([
    [{ $subtract: [1, 2, 3] }, 'Expression $subtract takes exactly 2 arguments. 3 were passed in'],
    [
      { $round: [1, 2, 3] },
      'Expression $round takes at least 1 arguments, and at most 2, but 3 were passed in',
    ],
    [{ $ifNull: [] }, '$ifNull needs at least two arguments, had: 0'],
    [{ $cond: [1, 2] }, 'Expression $cond takes exactly 3 arguments. 2 were passed in'],
    [{ $cond: { if: 1, then: 2 } }, "Missing 'else' parameter to $cond"],
    [{ $cond: { if: 1, then: 2, else: 3, when: 4 } }, 'Unrecognized parameter to $cond: when'],
    [{ $switch: [] }, '$switch expects an object'],
    [{ $switch: { branches: {} } }, "$switch expected an array for 'branches'"],
    [{ $switch: { branches: [1] } }, '$switch expected each branch to be an object'],
    [
      { $switch: { branches: [{ case: 1, then: 2, else: 3 }] } },
      '$switch found an unknown argument to a branch: else',
    ],
    [{ $switch: { branches: [{ then: 2 }] } }, "$switch requires each branch have a 'case' expression"],
    [{ $switch: { branches: [{ case: 1, then: 2 }], other: 1 } }, '$switch found an unknown argument: other'],
    [{ $trim: 'a' }, '$trim requires an object as an argument'],
    [{ $ltrim: { input: 'a', char: 'b' } }, '$ltrim found an unknown argument: char'],
    [{ $regexMatch: { input: 'a', regex: 'a' } }, "Unknown or unsupported expression operator '$regexMatch'"],
    [
      { $function: { body: 'return 1', args: [], lang: 'js' } },
      "Unknown or unsupported expression operator '$function'",
    ],
    [{ a: 1, $add: [1] }, "The field name '$add' in $expr must not start with '$'"],
    ['$', "'$' in $expr is not a valid field path"],
    ['$a..b', 'has an empty segment'],
    ['$$NOW', "Use of undefined variable '$$NOW'"],
  ])('%j', (raw, message) => {
    expect(() => parse(raw)).toThrow(QueryError);
    expect(() => parse(raw)).toThrow(message);
  });

  it(`refuses more than ${MAX_EXPRESSION_NODES} parts and more than ${MAX_EXPRESSION_DEPTH} levels`, () => {
    expect(() => parse({ $add: Array.from({ length: MAX_EXPRESSION_NODES }, () => 1) })).toThrow(
      /more than 1000 parts/,
    );
    const deep = Array.from({ length: MAX_EXPRESSION_DEPTH + 1 }).reduce<unknown>((e) => ({ $abs: e }), 1);
    expect(() => parse(deep)).toThrow(/nested more than 32 levels deep/);
  });
});

describe('SQL', () => {
  const compile = (raw: unknown) => {
    const params = new Params();
    return { sql: compileExpression(parse(raw), { params, current: 'doc' }), params };
  };

  it('binds every value of the request, and names operators only as our own literals', () => {
    const hostile = "x'); drop table t; --";
    const { sql, params } = compile({
      $concat: [hostile, { $toUpper: `$${hostile.replace(/\./g, '')}` }, { $literal: hostile }],
    });
    expect(sql).not.toContain('drop table');
    expect(params.values.filter((v) => typeof v === 'string' && v.includes('drop table'))).toHaveLength(3);
    expect(sql).toMatch(/^mdb\.expr_concat\(array\[\(select \$1::text::jsonb\), /);
  });

  it('writes every argument once, so nesting grows the SQL linearly', () => {
    const nested = (depth: number) =>
      Array.from({ length: depth }).reduce<unknown>(
        (e) => ({ $cond: [{ $ifNull: [e, 1] }, { $add: [e, 1] }, e] }),
        '$a',
      );
    // Each level holds its inner expression three times: the parse tree itself triples, so the
    // SQL must grow no faster than the expression it compiles.
    const ratio = (depth: number) => compile(nested(depth)).sql.length / JSON.stringify(nested(depth)).length;
    expect(ratio(5)).toBeLessThan(ratio(2) * 1.5);
  });

  it('$expr in a filter is the truthiness of its expression, beside the other conditions', () => {
    const params = new Params();
    const sql = compileFilter(parseFilter({ a: 1, $expr: { $gt: ['$spent', '$budget'] } }), {
      params,
      indexed: () => undefined,
    });
    expect(sql).toContain(`coalesce(mdb.jsonb_of(mdb.expr_cmp((doc -> $`);
    expect(sql).toContain(`<> all (array['false', 'null', '0']::jsonb[]), false)`);
  });

  it('refuses $expr below the top-level document, as MongoDB does', () => {
    expect(() => parseFilter({ a: { $elemMatch: { $expr: true } } })).toThrow(
      '$expr is not allowed inside $elemMatch: it can only be applied to the top-level document.',
    );
    expect(() => parseFilter({ $expr: true }, { noExpr: 'here' })).toThrow('$expr is not allowed here.');
    expect(parseFilter({ $or: [{ $expr: true }] })).toEqual({
      kind: 'or',
      children: [{ kind: 'expr', expr: { kind: 'literal', value: true } }],
    });
  });
});
