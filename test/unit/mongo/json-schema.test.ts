import { describe, expect, it } from 'vitest';
import { QueryError } from '../../../errors.js';
import { matchFilter } from '../../../mongo/filter/match.js';
import { parseFilter } from '../../../mongo/filter/parse.js';
import { compileFilter } from '../../../mongo/filter/sql.js';
import { RegexSession } from '../../../mongo/regex/run.js';
import { Params } from '../../../mongo/value/params.js';
import { schemaCases } from '../../integration/json-schema-cases.js';

describe('$jsonSchema evaluated in TypeScript (filter/match.ts) gives MongoDB answers', () => {
  it.each(schemaCases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const filter = parseFilter({ $jsonSchema: c.schema });
    // A request's matching runs in its regex session (mongo/regex/run.ts), and so does this.
    const session = new RegexSession();
    for (const [doc, expected] of c.docs)
      expect(await session.run(() => matchFilter(doc, filter)), JSON.stringify(doc)).toBe(expected);
  });
});

/** Schemas MongoDB refuses (jstests/core/json_schema/*.js), with a piece of its message. */
const errorCases: [schema: unknown, message: RegExp][] = [
  ['foo', /\$jsonSchema must be an object/],
  [[], /\$jsonSchema must be an object/],
  [{ type: 3 }, /'type' must be either a string or an array of strings/],
  [{ type: {} }, /'type' must be either a string or an array of strings/],
  [{ type: 'integer' }, /type 'integer' is not currently supported/],
  [{ type: 'double' }, /Unknown type name alias: double/],
  [{ type: 'bool' }, /Unknown type name alias: bool/],
  [{ bsonType: 'boolean' }, /Unknown type name alias: boolean/],
  [{ bsonType: 'integer' }, /type 'integer' is not currently supported/],
  [{ bsonType: 'unknown' }, /Unknown type name alias: unknown/],
  [{ bsonType: ['number', 2] }, /array elements must be strings/],
  [{ bsonType: 2 }, /must be either a string or an array of strings/],
  [{ type: ['number', 'string', 'number'] }, /has duplicate value: number/],
  [{ bsonType: [] }, /must name at least one type/],
  [{ type: 'string', bsonType: 'string' }, /Cannot specify both \$jsonSchema keywords 'type' and 'bsonType'/],
  [{ properties: { a: { bsonType: 'string', type: 'string' } } }, /Cannot specify both.*properties\.a/],
  [{ properties: 3 }, /'properties' must be an object/],
  [{ properties: [] }, /'properties' must be an object/],
  [{ properties: { num: 'number' } }, /Nested schema for \$jsonSchema property 'num' must be an object/],
  [{ properties: { num: { maximum: '0' } } }, /'maximum' must be a number/],
  [{ properties: { num: { maxLength: '0' } } }, /'maxLength' must be a non-negative integer/],
  [{ properties: { num: { minLength: {} } } }, /'minLength' must be a non-negative integer/],
  [{ properties: { num: { pattern: 0 } } }, /'pattern' must be a string/],
  [{ properties: { num: { pattern: '(?<n>a)' } } }, /named groups/],
  [{ patternProperties: { '(': {} } }, /not a valid regular expression|unbalanced|missing/i],
  [{ default: { _id: 0 } }, /'default' is not currently supported/],
  [{ definitions: {} }, /'definitions' is not currently supported/],
  [{ format: 'email' }, /'format' is not currently supported/],
  [{ id: 'x' }, /'id' is not currently supported/],
  [{ properties: { a: { $ref: '#/definitions/x' } } }, /'\$ref' is not currently supported/],
  [{ $schema: 'http://json-schema.org/draft-04/schema#' }, /'\$schema' is not currently supported/],
  [{ encrypt: {} }, /'encrypt' is not supported/],
  [{ invalid: {} }, /Unknown \$jsonSchema keyword: invalid/],
  [{ description: 1 }, /'description' must be of type string/],
  [{ title: {} }, /'title' must be of type string/],
  [{ items: 1 }, /'items' must be an array or an object/],
  [{ items: [1] }, /'items' requires that each element of the array is an object/],
  [{ additionalItems: 'true' }, /'additionalItems' must be an object or a boolean/],
  [{ additionalProperties: 1 }, /'additionalProperties' must be an object or a boolean/],
  [{ patternProperties: { a: 1 } }, /has property 'a' which is not an object/],
  [{ uniqueItems: 1 }, /'uniqueItems' must be a boolean/],
  [{ minItems: -1 }, /'minItems' must be a non-negative integer/],
  [{ maxItems: 12.5 }, /'maxItems' must be a non-negative integer/],
  [{ minProperties: 'x' }, /'minProperties' must be a non-negative integer/],
  [{ allOf: { maximum: '0' } }, /'allOf' must be an array/],
  [{ anyOf: [0] }, /'anyOf' must be an array of objects/],
  [{ oneOf: [] }, /'oneOf' must be a non-empty array/],
  [{ oneOf: [{ invalid: '0' }] }, /Unknown \$jsonSchema keyword: invalid.*oneOf\.0/],
  [{ not: [{}] }, /'not' must be an object/],
  [{ enum: 1 }, /'enum' must be an array/],
  [{ enum: [] }, /'enum' cannot be an empty array/],
  [{ enum: [1, 1.0] }, /'enum' array cannot contain duplicate values/],
  [
    {
      enum: [
        { a: 1, b: 2 },
        { b: 2, a: 1 },
      ],
    },
    /'enum' array cannot contain duplicate values/,
  ],
  [{ required: 'a' }, /'required' must be an array/],
  [{ required: [] }, /'required' cannot be an empty array/],
  [{ required: [1] }, /'required' must be an array of strings/],
  [{ required: ['a', 'a'] }, /'required' array cannot contain duplicate values/],
  [{ dependencies: [] }, /'dependencies' must be an object/],
  [
    { dependencies: { a: 1 } },
    /property 'a' in \$jsonSchema keyword 'dependencies' must be either an object or an array/,
  ],
  [{ dependencies: { a: [] } }, /cannot be an empty array/],
  [{ dependencies: { a: ['b', 'b'] } }, /duplicate/],
  [
    { properties: { a: { exclusiveMinimum: true } } },
    /'minimum' must be present if exclusiveMinimum is present/,
  ],
  [{ properties: { a: { maximum: 1, exclusiveMaximum: 1 } } }, /'exclusiveMaximum' must be a boolean/],
  [{ multipleOf: 0 }, /'multipleOf' must have a positive value/],
  [{ multipleOf: '2' }, /'multipleOf' must be a number/],
];

describe('parseFilter refuses the schemas MongoDB refuses', () => {
  it.each(errorCases)('%j', (schema, message) => {
    expect(() => parseFilter({ $jsonSchema: schema })).toThrow(QueryError);
    expect(() => parseFilter({ $jsonSchema: schema })).toThrow(message);
  });
});

describe('$jsonSchema: where it may appear, and its limits', () => {
  it('sits beside fields and inside $and, $or, $nor, and in a query $elemMatch', () => {
    for (const q of [
      { $jsonSchema: {}, a: 1 },
      { $and: [{ $jsonSchema: {} }] },
      { $or: [{ $jsonSchema: {} }, { b: 1 }] },
      { $nor: [{ $jsonSchema: {} }] },
      { arr: { $elemMatch: { $jsonSchema: { required: ['a'] } } } },
    ])
      expect(() => parseFilter(q), JSON.stringify(q)).not.toThrow();
    const elem = parseFilter({ arr: { $elemMatch: { $jsonSchema: { required: ['a'] } } } });
    expect(matchFilter({ arr: [{ b: 1 }, { a: 1 }] }, elem)).toBe(true);
    expect(matchFilter({ arr: [{ b: 1 }, 5] }, elem)).toBe(false);
  });

  it('is refused where MongoDB bans it: $pull conditions, arrayFilters, the $elemMatch projection', () => {
    for (const options of [{ banSpecial: true }])
      expect(() => parseFilter({ $and: [{ $jsonSchema: {} }] }, options)).toThrow(
        /\$jsonSchema is not allowed in this context/,
      );
  });

  it('refuses a field operator named $jsonSchema', () => {
    expect(() => parseFilter({ a: { $jsonSchema: {} } })).toThrow(
      /Unknown query operator '\$jsonSchema' on 'a'/,
    );
  });

  it('limits depth, size and enum length', () => {
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 40; i++) deep = { properties: { a: deep } };
    expect(() => parseFilter({ $jsonSchema: deep })).toThrow(/nested deeper than 32/);
    const wide = { properties: Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`f${i}`, {}])) };
    expect(() => parseFilter({ $jsonSchema: wide })).toThrow(/more than 1000 conditions/);
    const bigEnum = { enum: Array.from({ length: 1001 }, (_, i) => i) };
    expect(() => parseFilter({ $jsonSchema: bigEnum })).toThrow(/'enum' has more than 1000 values/);
    expect(() =>
      parseFilter({ $jsonSchema: { enum: Array.from({ length: 1000 }, (_, i) => i) } }),
    ).not.toThrow();
  });
});

describe('$jsonSchema SQL holds no request text', () => {
  const hostile = [
    "'; drop table workplaces; --",
    '"; select 1; --',
    'x$$ select $$',
    ') ? (@ == 1) || exists($',
    '🙂',
  ];
  it.each(hostile)('%j as names, values and patterns', (s) => {
    const params = new Params();
    const filter = parseFilter({
      $jsonSchema: {
        required: [s],
        properties: { [s]: { enum: [s, { [s]: s }], pattern: s.replace(/[\\()[\]{}.*+?^$|]/g, '\\$&') } },
        patternProperties: { [s.replace(/[\\()[\]{}.*+?^$|]/g, '\\$&')]: { minLength: 1 } },
        additionalProperties: { not: { type: 'string' } },
        dependencies: { [s]: [`${s}2`], x: { required: [s] } },
        items: [{ properties: { [s]: {} } }],
      },
    });
    const sql = compileFilter(filter, { params, indexed: () => undefined });
    expect(sql).not.toContain(s);
    expect(sql).not.toContain('drop');
    const stripped = sql.replace(/\$\d+::(text::jsonb|jsonpath|text|bigint)/g, '');
    expect(stripped).toMatch(/^[a-z_()., =<>\n*'0-9[\]:?&+{}#-]*$/);
  });
});
