/**
 * `$jsonSchema` through the front door: MongoDB's cases (json-schema-cases.ts) on the read route,
 * the other routes that take a query, the contexts MongoDB bans it from, hostile schemas, and a
 * differential of random schemas and documents between the SQL, the TypeScript evaluation
 * (filter/match.ts) and ajv where JSON Schema and MongoDB agree.
 */
import { Ajv } from 'ajv';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { matchFilter } from '../../mongo/filter/match.js';
import { parseFilter } from '../../mongo/filter/parse.js';
import { RegexSession } from '../../mongo/regex/run.js';
import type { Json, JsonObject } from '../../mongo/value/json.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { propertyRuns } from '../helpers/property-runs.js';
import { schemaCases } from './json-schema-cases.js';
import { freshCollection } from './storage-helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

describe('$jsonSchema on the read route gives MongoDB answers', () => {
  it('every case of json-schema-cases.ts, with and without an index on the fields', async () => {
    const col = await freshCollection(t);
    // One collection for all cases: each case's documents get ids of their own, and the query
    // keeps to them.
    const all: JsonObject[] = [];
    const expected = schemaCases.map((c, i) =>
      c.docs.map(([doc, matches]) => {
        const _id = `${i}-${String(doc._id)}`;
        all.push({ ...doc, _id });
        return [_id, matches] as const;
      }),
    );
    await col.insert(all);
    for (const indexed of [false, true]) {
      if (indexed) for (const f of ['num', 'a', 'foo', 's', 'obj']) await col.index([f]);
      for (const [i, c] of schemaCases.entries()) {
        const rows = expected[i] as (readonly [string, boolean])[];
        const schema = structuredClone(c.schema) as JsonObject;
        // A root enum names whole documents: their ids are renamed as the documents' were.
        if (Array.isArray(schema.enum))
          for (const v of schema.enum)
            if (v !== null && typeof v === 'object' && !Array.isArray(v) && '_id' in v)
              v._id = `${i}-${String(v._id)}`;
        const query = { $jsonSchema: schema, _id: { $in: rows.map(([id]) => id) } };
        const ids = await col.ids({ query });
        expect(ids.sort(), `${c.name} (indexed: ${indexed})`).toEqual(
          rows
            .filter(([, m]) => m)
            .map(([id]) => id)
            .sort(),
        );
      }
    }
  });

  it('sits in $or, $and and $nor, beside fields, and in a query $elemMatch', async () => {
    const col = await freshCollection(t);
    await col.insert([
      { _id: 0, obj: 3 },
      { _id: 1, obj: { f1: { f3: 'str' }, f2: 'str' } },
      { _id: 2, obj: { f1: 'str', f2: 'str' } },
      { _id: 3, obj: { f1: 1, f2: 'str' }, arr: [{ a: 1 }, 2] },
    ]);
    const schema = {
      properties: {
        obj: {
          properties: {
            f1: { type: 'object', properties: { f3: { type: 'string' } } },
            f2: { type: 'string' },
          },
        },
      },
    };
    // json_schema.js: $jsonSchema combined with other operators of the match language.
    expect(await col.ids({ query: { $or: [{ 'obj.f1': 'str' }, { $jsonSchema: schema }] } })).toEqual([
      0, 1, 2,
    ]);
    expect(await col.ids({ query: { $and: [{ $jsonSchema: schema }, { obj: 3 }] } })).toEqual([0]);
    expect(await col.ids({ query: { $nor: [{ $jsonSchema: schema }] } })).toEqual([2, 3]);
    expect(await col.ids({ query: { $jsonSchema: schema, _id: { $gte: 1 } } })).toEqual([1]);
    expect(await col.ids({ query: { arr: { $elemMatch: { $jsonSchema: { required: ['a'] } } } } })).toEqual([
      3,
    ]);
    expect(await col.ids({ query: { arr: { $elemMatch: { $jsonSchema: { required: ['b'] } } } } })).toEqual(
      [],
    );
    // The positional update and projection evaluate the query in TypeScript: the element it matched.
    const elementQuery = { arr: { $elemMatch: { $jsonSchema: { required: ['a'] } } } };
    expect(await col.read({ query: elementQuery, fields: { 'arr.$': 1 } })).toEqual([
      { _id: 3, arr: [{ a: 1 }] },
    ]);
    const updated = await col.call('update', { query: elementQuery, doc: { $set: { 'arr.$.a': 2 } } });
    expect(updated.status, updated.text).toBe(200);
    expect(await col.read({ query: { _id: 3 }, fields: { arr: 1 } })).toEqual([
      { _id: 3, arr: [{ a: 2 }, 2] },
    ]);
  });
});

describe('$jsonSchema in count, update, delete and the single-document routes (misc_validation.js)', () => {
  it('counts, updates and deletes what it matches', async () => {
    const col = await freshCollection(t);
    await col.insert([
      { _id: 1, a: 1, b: 'str' },
      { _id: 2, a: 1, b: 1 },
    ]);
    const count = await col.call('count', {
      query: { $jsonSchema: { properties: { a: { type: 'number' }, b: { type: 'string' } } } },
    });
    expect(count.status, count.text).toBe(200);
    expect(count.body.result.count).toBe(1);

    const schema = { properties: { a: { type: 'number', maximum: 2 } } };
    await col.insert([
      { _id: 3, a: 2 },
      { _id: 4, a: 'str' },
      { _id: 5, a: [3] },
    ]);
    const updated = await col.call('update', { query: { $jsonSchema: schema }, doc: { $inc: { a: 1 } } });
    expect(updated.status, updated.text).toBe(200);
    // a: 'str' and a: [3] fail type number: 1, 2 and 3 match.
    expect(updated.body.result.matchedCount).toBe(3);
    expect(await col.ids({ query: { $jsonSchema: schema } })).toEqual([1, 2]);

    const found = await col.call('find-one-and-update', {
      query: { $jsonSchema: { properties: { b: { type: 'string', minLength: 3 } }, required: ['b'] } },
      doc: { $set: { b: 'extra_long_string' } },
    });
    expect(found.status, found.text).toBe(200);
    expect(found.body.result.value).toMatchObject({ _id: 1, b: 'str' });

    // misc_validation.js: distinct with $jsonSchema.
    await col.insert([
      { _id: 6, a: 'str' },
      { _id: 7, a: ['STR', 'str'] },
    ]);
    const distinct = await col.call('distinct', {
      key: 'a',
      query: { $jsonSchema: { properties: { a: { type: 'number' } } } },
    });
    expect(distinct.status, distinct.text).toBe(200);
    expect(distinct.body.result).toEqual([2, 3]);

    const deleted = await col.call('delete', { query: { $jsonSchema: { required: ['b'] } } });
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body.result.deletedCount).toBe(2);
    expect(await col.ids({ query: {} })).toEqual([3, 4, 5, 6, 7]);
  });

  it('is refused where MongoDB bans it: $pull, arrayFilters, the $elemMatch projection', async () => {
    const col = await freshCollection(t);
    await col.insert([{ _id: 1, a: [{ b: 1 }] }]);
    const refusals = [
      ['update', { query: {}, doc: { $pull: { a: { $and: [{ $jsonSchema: {} }] } } } }],
      ['update', { query: {}, doc: { $set: { 'a.$[x].b': 2 } }, arrayFilters: [{ $jsonSchema: {} }] }],
      ['read', { query: {}, fields: { a: { $elemMatch: { $jsonSchema: {} } } } }],
    ] as const;
    for (const [op, body] of refusals) {
      const res = await col.call(op, body);
      expect(res.status, res.text).toBe(400);
      expect(res.body.code).toBe('INVALID_QUERY');
      expect(res.body.detail).toMatch(/\$jsonSchema is not allowed in this context/);
    }
  });

  it('bad schemas, deep schemas and huge enums are a 400 naming the keyword', async () => {
    const col = await freshCollection(t);
    let deep: JsonObject = {};
    for (let i = 0; i < 40; i++) deep = { not: deep };
    const cases: [Json, RegExp][] = [
      [{ format: 'email' }, /'format' is not currently supported/],
      [{ properties: { a: { $ref: '#/x' } } }, /'\$ref' is not currently supported.*properties\.a/],
      [{ type: 'integer' }, /'integer' is not currently supported/],
      [{ foo: 1 }, /Unknown \$jsonSchema keyword: foo/],
      [deep, /nested deeper than 32/],
      [{ enum: Array.from({ length: 1001 }, (_, i) => i) }, /more than 1000 values/],
      [{ properties: { a: { pattern: '(a' } } }, /regular expression|parenthes/],
    ];
    for (const [schema, message] of cases) {
      const res = await col.call('read', { query: { $jsonSchema: schema } });
      expect(res.status, res.text).toBe(400);
      expect(res.body.code).toBe('INVALID_QUERY');
      expect(res.body.detail).toMatch(message);
    }
    // At the limits it runs: the deepest nesting of subqueries, the most conditions.
    let deepDoc: Json = 1;
    for (let i = 0; i < 20; i++) deepDoc = [{ a: deepDoc }];
    let deepArray: Json = 1;
    for (let i = 0; i < 20; i++) deepArray = [deepArray];
    await col.insert([{ _id: 1 }, { _id: 2, a: deepDoc }, { _id: 3, a: deepArray }]);
    for (const kw of ['items', 'additionalProperties', 'not', 'properties']) {
      let nested: JsonObject = { type: 'number' };
      for (let i = 0; i < 30; i++)
        nested = kw === 'properties' ? { properties: { a: nested } } : { [kw]: nested };
      nested = { properties: { a: nested } };
      const res = await col.call('read', { query: { $jsonSchema: nested } });
      expect(res.status, `${kw}: ${res.text}`).toBe(200);
    }
    const props = Object.fromEntries(Array.from({ length: 497 }, (_, i) => [`f${i}`, { minimum: i }]));
    const wide = await col.call('read', { query: { $jsonSchema: { properties: props } } });
    expect(wide.status, wide.text).toBe(200);
    const big = await col.call('read', {
      query: { $jsonSchema: { enum: Array.from({ length: 1000 }, (_, i) => ({ _id: i })) } },
    });
    expect(big.status, big.text).toBe(200);
  });
});

// ---- Differential: random schemas × random documents ----------------------------------------

const RUNS = Number(process.env.JSON_SCHEMA_RUNS ?? propertyRuns(300));
const FC_SEED = process.env.FC_SEED === undefined ? {} : { seed: Number(process.env.FC_SEED) };

const scalarArb = fc.oneof(
  fc.constantFrom(-2, -1, 0, 0.5, 1, 2, 3, 2147483648, 0.3),
  fc.constantFrom('', 'a', 'ab', 'abc', 'B', 'é😀', 'x1'),
  fc.boolean(),
  fc.constant(null),
);
const valueArb: fc.Arbitrary<Json> = fc.letrec<{ v: Json }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalarArb,
    // Elements from a small pool as well, so that arrays often repeat one (uniqueItems).
    fc.array(fc.oneof(tie('v'), fc.constantFrom<Json>(1, 'a', [1], { a: 1 })), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom('a', 'b', 'c', 'ab'), tie('v'), { maxKeys: 3, noNullPrototype: true }),
  ),
})).v;
const docArb = fc.dictionary(fc.constantFrom('a', 'b', 'c', 'ab'), valueArb, {
  maxKeys: 4,
  noNullPrototype: true,
});

/** `ajv`: whether the schema is also draft 4 JSON Schema with the same meaning (no bsonType). */
const schemaArb = (ajvSafe: boolean): fc.Arbitrary<JsonObject> =>
  fc.letrec<{ s: JsonObject }>((tie) => {
    const sub = tie('s');
    const types = ajvSafe
      ? fc.constantFrom('object', 'array', 'number', 'boolean', 'string', 'null')
      : fc.constantFrom('object', 'array', 'number', 'bool', 'string', 'null', 'int', 'double', 'long');
    const keywords: fc.Arbitrary<[string, Json]>[] = [
      fc.tuple(
        fc.constant(ajvSafe ? 'type' : 'bsonType'),
        fc.oneof(types, fc.uniqueArray(types, { minLength: 1, maxLength: 2 })),
      ),
      fc.tuple(fc.constantFrom('minimum', 'maximum'), fc.constantFrom(-1, 0, 0.5, 1, 2)),
      fc.tuple(fc.constant('multipleOf'), fc.constantFrom(1, 2, ...(ajvSafe ? [] : [0.1, 0.5]))),
      fc.tuple(
        fc.constantFrom('minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties'),
        fc.integer({ min: 0, max: 3 }),
      ),
      fc.tuple(fc.constant('pattern'), fc.constantFrom('a', '^a', 'b$', '\\d', '^.{2}$')),
      fc.tuple(fc.constant('uniqueItems'), fc.boolean()),
      fc.tuple(
        fc.constant('required'),
        fc.uniqueArray(fc.constantFrom('a', 'b', 'c'), { minLength: 1, maxLength: 2 }),
      ),
      fc.tuple(
        fc.constant('properties'),
        fc.dictionary(fc.constantFrom('a', 'b', 'ab'), sub, { maxKeys: 2, noNullPrototype: true }),
      ),
      fc.tuple(
        fc.constant('patternProperties'),
        fc.dictionary(fc.constantFrom('^a', 'b'), sub, { maxKeys: 2, noNullPrototype: true }),
      ),
      fc.tuple(fc.constant('additionalProperties'), fc.oneof(fc.boolean(), sub)),
      // draft 7's metaschema, which ajv checks, wants a non-empty array; MongoDB takes [] too.
      fc.tuple(
        fc.constant('items'),
        fc.oneof(sub, fc.array(sub, { minLength: ajvSafe ? 1 : 0, maxLength: 2 })),
      ),
      fc.tuple(fc.constant('additionalItems'), fc.oneof(fc.boolean(), sub)),
      fc.tuple(
        fc.constant('enum'),
        fc.uniqueArray(valueArb, { minLength: 1, maxLength: 3, selector: (v) => JSON.stringify(v) }),
      ),
      fc.tuple(fc.constantFrom('allOf', 'anyOf', 'oneOf'), fc.array(sub, { minLength: 1, maxLength: 2 })),
      fc.tuple(fc.constant('not'), sub),
      fc.tuple(
        fc.constant('dependencies'),
        fc.dictionary(fc.constantFrom('a', 'b'), fc.oneof(sub, fc.constant<Json>(['c'])), {
          maxKeys: 1,
          noNullPrototype: true,
        }),
      ),
    ];
    // Draft 4's boolean bounds, which ajv (draft 7) reads otherwise; without their bound the schema
    // is refused, and filtered out below.
    if (!ajvSafe)
      keywords.push(fc.tuple(fc.constantFrom('exclusiveMinimum', 'exclusiveMaximum'), fc.boolean()));
    const keyword = fc.oneof(...keywords);
    return {
      s: fc
        .array(keyword, { minLength: 1, maxLength: 3, depthIdentifier: 'schema' })
        .map((kws) => Object.fromEntries(kws) as JsonObject)
        .filter((s) => {
          try {
            parseFilter({ $jsonSchema: s });
            return true;
          } catch {
            return false; // enum duplicates by JSON equality (1 and 1.0), or the like
          }
        }),
    };
  }).s;

/** draft 4's boolean exclusive bounds are not generated, so the schema is draft 7's too, which ajv reads. */
const ajv = new Ajv({ strict: false, allowUnionTypes: true });

describe('differential: SQL, TypeScript and ajv agree on random schemas and documents', () => {
  it(
    'on the read route',
    async () => {
      const col = await freshCollection(t);
      const docs = fc
        .sample(docArb, { numRuns: 80, seed: 7 })
        .map((d, i) => ({ ...d, _id: i }) as JsonObject);
      await col.insert(docs);
      let compared = 0;
      // Runs where the schema told documents apart (neither all nor none matched).
      let informative = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.boolean().chain((ajvSafe) => fc.tuple(fc.constant(ajvSafe), schemaArb(ajvSafe))),
          fc.boolean(),
          async ([ajvSafe, schema], wrap) => {
            const query = wrap ? { $or: [{ $jsonSchema: schema }, { _id: -1 }] } : { $jsonSchema: schema };
            const filter = parseFilter(structuredClone(query));
            const ts = (await new RegexSession().run(() => docs.filter((d) => matchFilter(d, filter)))).map(
              (d) => d._id,
            );
            const sql = await col.ids({ query });
            expect(sql, JSON.stringify(schema)).toEqual(ts);
            if (ajvSafe) {
              // The root: ajv validates the document as it is stored, `_id` included.
              const validate = ajv.compile(schema as object);
              expect(
                docs.filter((d) => validate(d)).map((d) => d._id),
                JSON.stringify(schema),
              ).toEqual(ts);
            }
            compared++;
            if (ts.length > 0 && ts.length < docs.length) informative++;
          },
        ),
        { numRuns: RUNS, ...FC_SEED },
      );
      expect(compared).toBe(RUNS);
      expect(informative).toBeGreaterThan(RUNS / 5);
    },
    60_000 + RUNS * 100,
  );
});
