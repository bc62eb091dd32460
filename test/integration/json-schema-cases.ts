/**
 * `$jsonSchema` cases: a schema, documents and whether MongoDB matches each, from MongoDB's jstests
 * (jstests/core/json_schema/*.js: assertSchemaMatch(coll, schema, doc, expected)) and the manual's
 * `$jsonSchema` page. json-schema.test.ts runs them through the read route on the database, and
 * test/unit/mongo/json-schema.test.ts through matchFilter. Documents carry an `_id` because MongoDB's
 * do (the jstests insert them): it counts for `minProperties` and `additionalProperties`.
 *
 * MongoDB's BSON types without a JSON form (NumberLong, NumberInt, ObjectId, dates) are left out or
 * written as this API reads JSON numbers: an integral number within int32 is `int`, any other
 * number `double`; `long` and `decimal` match nothing.
 */
import type { Json, JsonObject } from '../../mongo/value/json.js';

export interface SchemaCase {
  name: string;
  schema: JsonObject;
  /** Each document (given an `_id` if it has none) with MongoDB's answer. */
  docs: [doc: JsonObject, matches: boolean][];
}

const NUM_DOCS: JsonObject[] = [
  { _id: 0, num: 3 },
  { _id: 1, num: -3 },
  { _id: 2, num: 2 },
  { _id: 3, num: -2 },
  { _id: 6, num: {} },
  { _id: 7, num: 'str' },
  { _id: 8, num: 'string' },
  { _id: 9 },
];
const only = (docs: JsonObject[], ids: Json[]): [JsonObject, boolean][] =>
  docs.map((d) => [d, ids.includes(d._id as Json)]);

export const schemaCases: SchemaCase[] = [
  // json_schema.js
  { name: 'the empty schema matches everything', schema: {}, docs: only(NUM_DOCS, [0, 1, 2, 3, 6, 7, 8, 9]) },
  {
    name: 'type object matches every document',
    schema: { type: 'object' },
    docs: only(NUM_DOCS, [0, 1, 2, 3, 6, 7, 8, 9]),
  },
  {
    name: 'a root type other than object matches nothing',
    schema: { type: 'string' },
    docs: only(NUM_DOCS, []),
  },
  { name: 'a root bsonType long matches nothing', schema: { bsonType: 'long' }, docs: only(NUM_DOCS, []) },
  {
    name: 'a root bsonType objectId matches nothing',
    schema: { bsonType: 'objectId' },
    docs: only(NUM_DOCS, []),
  },
  {
    name: 'type number: numbers, or a missing field',
    schema: { properties: { num: { type: 'number' } } },
    docs: only(NUM_DOCS, [0, 1, 2, 3, 9]),
  },
  {
    name: 'maximum with type number',
    schema: { properties: { num: { type: 'number', maximum: -1 } } },
    docs: only(NUM_DOCS, [1, 3, 9]),
  },
  {
    name: 'maximum with an explicit root type object',
    schema: { type: 'object', properties: { num: { type: 'number', maximum: -1 } } },
    docs: only(NUM_DOCS, [1, 3, 9]),
  },
  {
    name: 'maximum without a type applies to numbers only',
    schema: { properties: { num: { maximum: 0 } } },
    docs: only(NUM_DOCS, [1, 3, 6, 7, 8, 9]),
  },
  {
    name: 'maximum with a non-numeric type does nothing',
    schema: { properties: { num: { type: 'string', maximum: 0 } } },
    docs: only(NUM_DOCS, [7, 8, 9]),
  },
  {
    name: 'maxLength 2',
    schema: { properties: { num: { type: 'string', maxLength: 2 } } },
    docs: only(NUM_DOCS, [9]),
  },
  {
    name: 'maxLength 3',
    schema: { properties: { num: { type: 'string', maxLength: 3 } } },
    docs: only(NUM_DOCS, [7, 9]),
  },
  {
    name: 'minLength 4',
    schema: { properties: { num: { type: 'string', minLength: 4 } } },
    docs: only(NUM_DOCS, [8, 9]),
  },
  {
    name: 'minLength 3',
    schema: { properties: { num: { type: 'string', minLength: 3 } } },
    docs: only(NUM_DOCS, [7, 8, 9]),
  },
  {
    name: 'pattern searches (unanchored)',
    schema: { properties: { num: { type: 'string', pattern: 'ing' } } },
    docs: only(NUM_DOCS, [8, 9]),
  },
  {
    name: 'nested properties apply only to objects',
    schema: {
      properties: {
        obj: {
          properties: {
            f1: { type: 'object', properties: { f3: { type: 'string' } } },
            f2: { type: 'string' },
          },
        },
      },
    },
    docs: [
      [{ _id: 0, obj: 3 }, true],
      [{ _id: 1, obj: { f1: { f3: 'str' }, f2: 'str' } }, true],
      [{ _id: 2, obj: { f1: 'str', f2: 'str' } }, false],
      [{ _id: 3, obj: { f1: 1, f2: 'str' } }, false],
    ],
  },
  {
    name: 'type array and type number on arrays (no traversal)',
    schema: { properties: { arr: { type: 'array' } } },
    docs: [
      [{ _id: 0, arr: 3 }, false],
      [{ _id: 1, arr: [1, 'foo'] }, true],
      [{ _id: 2, arr: [{ a: 1 }, { b: 2 }] }, true],
      [{ _id: 3, arr: [] }, true],
      [{ _id: 4, arr: { a: [] } }, false],
    ],
  },
  {
    name: 'type number does not match an array of numbers',
    schema: { properties: { arr: { type: 'number' } } },
    docs: [
      [{ _id: 0, arr: 3 }, true],
      [{ _id: 1, arr: [1, 'foo'] }, false],
      [{ _id: 3, arr: [] }, false],
    ],
  },
  {
    name: 'description and title are allowed and ignored',
    schema: {
      description: 'test',
      title: 'insert title',
      properties: { a: { description: 'test', title: 't' } },
    },
    docs: [[{ _id: 0, a: {} }, true]],
  },
  // bsontype.js, numbers as this API types them
  {
    name: 'bsonType double: a number that is not an int32 integer',
    schema: { properties: { num: { bsonType: 'double' } } },
    docs: [
      [{ _id: 0, num: 3.5 }, true],
      [{ _id: 1, num: 3 }, false],
      [{ _id: 2, num: 2147483648 }, true],
      [{ _id: 3, num: {} }, false],
      [{ _id: 4, num: [3.5] }, false],
      [{ _id: 5, foo: {} }, true],
    ],
  },
  {
    name: 'bsonType int: an int32 integer',
    schema: { properties: { num: { bsonType: 'int' } } },
    docs: [
      [{ _id: 0, num: 3 }, true],
      [{ _id: 1, num: 3.5 }, false],
      [{ _id: 2, num: -2147483648 }, true],
      [{ _id: 3, num: 2147483648 }, false],
      [{ _id: 4, num: [3] }, false],
      [{ _id: 5, foo: {} }, true],
    ],
  },
  {
    name: 'bsonType long and decimal match no JSON number',
    schema: { properties: { num: { bsonType: ['long', 'decimal'] } } },
    docs: [
      [{ _id: 0, num: 3 }, false],
      [{ _id: 1, num: 3.5 }, false],
      [{ _id: 2, foo: {} }, true],
    ],
  },
  {
    name: 'bsonType number: any number',
    schema: { properties: { num: { bsonType: 'number' } } },
    docs: [
      [{ _id: 0, num: 3 }, true],
      [{ _id: 1, num: 3.5 }, true],
      [{ _id: 2, num: '3' }, false],
    ],
  },
  {
    name: 'bsonType string, object, array, bool, null',
    schema: {
      properties: {
        s: { bsonType: 'string' },
        o: { bsonType: 'object' },
        a: { bsonType: 'array' },
        b: { bsonType: 'bool' },
        n: { bsonType: 'null' },
      },
    },
    docs: [
      [{ _id: 0, s: '', o: {}, a: [], b: false, n: null }, true],
      [{ _id: 1, s: true }, false],
      [{ _id: 2, s: [1, 'foo'] }, false],
      [{ _id: 3, o: [{}] }, false],
      [{ _id: 4, a: {} }, false],
      [{ _id: 5, b: 1 }, false],
      [{ _id: 6, n: 0 }, false],
    ],
  },
  {
    name: 'type boolean and null, required',
    schema: { properties: { b: { type: 'boolean' }, n: { type: 'null' } }, required: ['n'] },
    docs: [
      [{ _id: 0, b: true, n: null }, true],
      [{ _id: 1, b: 1, n: null }, false],
      [{ _id: 2 }, false],
    ],
  },
  {
    name: 'bsonType objectId, date and the other BSON types match no JSON value',
    schema: { properties: { o: { bsonType: ['objectId', 'date', 'regex', 'timestamp', 'binData'] } } },
    docs: [
      [{ _id: 0, o: 'abc' }, false],
      [{ _id: 1, o: 1 }, false],
      [{ _id: 2 }, true],
    ],
  },
  {
    name: 'type and bsonType in different subschemas',
    schema: { type: 'object', properties: { obj: { bsonType: 'object' } } },
    docs: [
      [{ _id: 0, obj: {} }, true],
      [{ _id: 1, obj: [] }, false],
    ],
  },
  {
    name: 'type as an array of types',
    schema: { properties: { f: { type: ['number', 'string'] } } },
    docs: [
      [{ _id: 0, f: 1 }, true],
      [{ _id: 1, f: 'str' }, true],
      [{ _id: 2 }, true],
      [{ _id: 3, f: ['str', 1] }, false],
      [{ _id: 4, f: {} }, false],
    ],
  },
  {
    name: 'a root type or bsonType array with object',
    schema: { anyOf: [{ type: ['object', 'string'] }, { bsonType: ['object', 'double'] }] },
    docs: [[{ _id: 0, foo: 1, bar: 1 }, true]],
  },
  // items.js
  {
    name: 'items at the root has no effect',
    schema: { items: { type: 'number' } },
    docs: [[{ _id: 0 }, true]],
  },
  {
    name: 'items matches a missing field or a non-array',
    schema: { properties: { a: { items: { minimum: 0 } } } },
    docs: [
      [{ _id: 0 }, true],
      [{ _id: 1, a: -1 }, true],
    ],
  },
  {
    name: 'items as a schema applies to every element',
    schema: { properties: { a: { items: { pattern: 'a+b' } } } },
    docs: [
      [{ _id: 0, a: [] }, true],
      [{ _id: 1, a: [7] }, true],
      [{ _id: 2, a: [null] }, true],
      [{ _id: 3, a: ['cab'] }, true],
      [{ _id: 4, a: ['cab', 'caab'] }, true],
      [{ _id: 5, a: ['cab', 'caab', 'b'] }, false],
    ],
  },
  {
    name: 'items as an array applies by position',
    schema: { properties: { a: { items: [{ multipleOf: 2 }] } } },
    docs: [
      [{ _id: 0, a: [] }, true],
      [{ _id: 1, a: [2] }, true],
      [{ _id: 2, a: [2, 3] }, true],
      [{ _id: 3, a: [3] }, false],
    ],
  },
  {
    name: 'items as an array of two schemas',
    schema: { properties: { a: { items: [{ maxLength: 1 }, { maxLength: 2 }] } } },
    docs: [
      [{ _id: 0, a: [] }, true],
      [{ _id: 1, a: ['1'] }, true],
      [{ _id: 2, a: ['1', '12'] }, true],
      [{ _id: 3, a: ['1', '12', '123'] }, true],
      [{ _id: 4, a: ['12'] }, false],
      [{ _id: 5, a: ['1', '123'] }, false],
    ],
  },
  {
    name: 'items as an empty array has no effect',
    schema: { properties: { a: { items: [] } } },
    docs: [
      [{ _id: 0 }, true],
      [{ _id: 1, a: 'blah' }, true],
      [{ _id: 2, a: [1, 'foo', {}] }, true],
    ],
  },
  // additional_items.js
  {
    name: 'additionalItems without items has no effect',
    schema: { properties: { a: { additionalItems: false } } },
    docs: [
      [{ _id: 0, a: 'blah' }, true],
      [{ _id: 1, a: [1, 2, 3] }, true],
    ],
  },
  {
    name: 'additionalItems with items as a schema has no effect',
    schema: { properties: { a: { items: {}, additionalItems: { type: 'object' } } } },
    docs: [[{ _id: 0, a: [1, 2, 3] }, true]],
  },
  {
    name: 'additionalItems false bans elements past items',
    schema: {
      properties: { a: { items: [{ type: 'number' }, { type: 'string' }], additionalItems: false } },
    },
    docs: [
      [{ _id: 0, a: [] }, true],
      [{ _id: 1, a: [229] }, true],
      [{ _id: 2, a: [229, 'West 43rd'] }, true],
      [{ _id: 3, a: [229, 'West 43rd', 'Street'] }, false],
    ],
  },
  {
    name: 'additionalItems true has no effect',
    schema: { properties: { a: { items: [{ type: 'number' }, { type: 'string' }], additionalItems: true } } },
    docs: [[{ _id: 0, a: [229, 'West 43rd', 'Street'] }, true]],
  },
  {
    name: 'additionalItems as a schema applies past items',
    schema: {
      properties: {
        a: { items: [{ type: 'number' }, { type: 'string' }], additionalItems: { type: 'object' } },
      },
    },
    docs: [
      [{ _id: 0, a: [229, 'West 43rd'] }, true],
      [{ _id: 1, a: [229, 'West 43rd', 'Street'] }, false],
      [{ _id: 2, a: [229, 'West 43rd', {}] }, true],
    ],
  },
  {
    name: 'an empty array passes items and additionalItems that nothing matches',
    schema: { properties: { a: { items: [{ not: {} }], additionalItems: { not: {} } } } },
    docs: [
      [{ _id: 0, a: [] }, true],
      [{ _id: 1, a: [1] }, false],
    ],
  },
  // additional_properties.js
  {
    name: 'additionalProperties false at the root (_id must be listed)',
    schema: { properties: { _id: {}, a: {} }, additionalProperties: false },
    docs: [
      [{ _id: 1 }, true],
      [{ _id: 2, a: 1 }, true],
      [{ _id: 3, b: 1 }, false],
      [{ _id: 4, a: 1, b: 1 }, false],
    ],
  },
  {
    name: 'additionalProperties as a schema at the root',
    schema: { properties: { _id: {}, a: {} }, additionalProperties: { type: 'number' } },
    docs: [
      [{ _id: 1 }, true],
      [{ _id: 2, a: 'x' }, true],
      [{ _id: 3, b: 1 }, true],
      [{ _id: 4, b: 'str' }, false],
    ],
  },
  {
    name: 'additionalProperties with patternProperties',
    schema: {
      properties: { _id: {}, a: {} },
      patternProperties: { '^b': { type: 'string' } },
      additionalProperties: { type: 'number' },
    },
    docs: [
      [{ _id: 1 }, true],
      [{ _id: 2, a: 1, ba: 'str' }, true],
      [{ _id: 3, a: 1, ba: 'str', other: 1 }, true],
      [{ _id: 4, a: 1, ba: 'str', other: 'str' }, false],
      [{ _id: 5, a: 1, ba: 1, other: 1 }, false],
    ],
  },
  {
    name: 'additionalProperties false with patternProperties',
    schema: {
      properties: { _id: {}, a: {} },
      patternProperties: { '^b': { type: 'string' } },
      additionalProperties: false,
    },
    docs: [
      [{ _id: 1, a: 1, ba: 'str' }, true],
      [{ _id: 2, a: 1, ba: 'str', other: 1 }, false],
    ],
  },
  {
    name: 'nested additionalProperties false',
    schema: { properties: { obj: { properties: { a: {} }, additionalProperties: false } } },
    docs: [
      [{ _id: 0 }, true],
      [{ _id: 1, obj: 1 }, true],
      [{ _id: 2, obj: {} }, true],
      [{ _id: 3, obj: { a: 1 } }, true],
      [{ _id: 4, obj: { a: 1, b: 1 } }, false],
      [{ _id: 5, obj: { b: 1 } }, false],
    ],
  },
  {
    name: 'nested additionalProperties as a schema',
    schema: { properties: { obj: { properties: { a: {} }, additionalProperties: { type: 'number' } } } },
    docs: [
      [{ _id: 0, obj: { a: 1, b: 1 } }, true],
      [{ _id: 1, obj: { a: 1, b: 'str' } }, false],
      [{ _id: 2, obj: { b: 'str' } }, false],
    ],
  },
  // pattern_properties.js
  {
    name: 'patternProperties at the root',
    schema: { patternProperties: { '^a': { type: 'number' }, '^b': { type: 'string' } } },
    docs: [
      [{ _id: 0 }, true],
      [{ _id: 1, c: 1 }, true],
      [{ _id: 2, ca: 1, cb: 1 }, true],
      [{ _id: 3, a: 'str', ca: 1, cb: 1 }, false],
      [{ _id: 4, a: 1, b: 1, ca: 1, cb: 1 }, false],
      [{ _id: 5, a: 1, b: 'str', ca: 1, cb: 1 }, true],
    ],
  },
  {
    name: 'patternProperties apply to fields properties also names',
    schema: { properties: { aa: { type: 'number' } }, patternProperties: { '^a': { type: 'string' } } },
    docs: [[{ _id: 0, aa: 1 }, false]],
  },
  // logical_keywords.js
  {
    name: 'allOf',
    schema: { properties: { foo: { allOf: [{ type: 'number' }, { minimum: 0 }] } } },
    docs: [
      [{ _id: 0, foo: 0 }, true],
      [{ _id: 1, foo: 'string' }, false],
      [{ _id: 2, foo: [0] }, false],
    ],
  },
  {
    name: 'allOf at the root',
    schema: { allOf: [{ properties: { foo: { type: 'string' } } }] },
    docs: [
      [{ _id: 0, foo: 'str' }, true],
      [{ _id: 1, foo: 1 }, false],
    ],
  },
  {
    name: 'anyOf',
    schema: { properties: { foo: { anyOf: [{ type: 'string' }, { type: 'number', minimum: 1 }] } } },
    docs: [
      [{ _id: 0, foo: 'str' }, true],
      [{ _id: 1, foo: 1 }, true],
      [{ _id: 2, foo: 0 }, false],
    ],
  },
  {
    name: 'anyOf of object and string does not match an array of objects',
    schema: { properties: { foo: { anyOf: [{ type: 'string' }, { type: 'object' }] } } },
    docs: [
      [{ _id: 0, foo: {} }, true],
      [{ _id: 1, foo: [{}] }, false],
    ],
  },
  {
    name: 'oneOf',
    schema: { properties: { foo: { oneOf: [{ minimum: 0 }, { maximum: 3 }] } } },
    docs: [
      [{ _id: 0, foo: 4 }, true],
      [{ _id: 1, foo: 1 }, false],
      [{ _id: 2, foo: 'str' }, false],
    ],
  },
  {
    name: 'oneOf of type string and a pattern',
    schema: { properties: { foo: { oneOf: [{ type: 'string' }, { pattern: 'ing' }] } } },
    docs: [
      [{ _id: 0, foo: 'str' }, true],
      [{ _id: 1, foo: 'string' }, false],
    ],
  },
  {
    name: 'oneOf of two empty schemas matches nothing',
    schema: { oneOf: [{}, {}] },
    docs: [[{ _id: 0 }, false]],
  },
  {
    name: 'not',
    schema: { properties: { foo: { not: { type: 'number' } } } },
    docs: [
      [{ _id: 0 }, true],
      [{ _id: 1, foo: 'str' }, true],
      [{ _id: 2, foo: 1 }, false],
    ],
  },
  {
    name: 'not of the empty schema at the root matches nothing',
    schema: { not: {} },
    docs: [[{ _id: 0 }, false]],
  },
  {
    name: 'not at the root',
    schema: { not: { properties: { foo: { type: 'string' } } } },
    docs: [
      [{ _id: 0, foo: 1 }, true],
      [{ _id: 1, foo: 'str' }, false],
      [{ _id: 2 }, false],
    ],
  },
  {
    name: 'not with a type beside it',
    schema: { properties: { foo: { type: 'string', not: { maxLength: 4 } } } },
    docs: [
      [{ _id: 0 }, true],
      [{ _id: 1, foo: 'string' }, true],
      [{ _id: 2, foo: 'str' }, false],
      [{ _id: 3, foo: 1 }, false],
    ],
  },
  {
    name: 'enum of scalars does not traverse arrays',
    schema: { properties: { a: { enum: ['str', 5] } } },
    docs: [
      [{ _id: 0, a: 'str' }, true],
      [{ _id: 1, a: 5 }, true],
      [{ _id: 2 }, true],
      [{ _id: 3, a: ['str'] }, false],
      [{ _id: 4, a: 5.0000001 }, false],
    ],
  },
  {
    name: 'enum with null matches null only',
    schema: { properties: { a: { enum: [null] } }, required: ['a'] },
    docs: [
      [{ _id: 0, a: null }, true],
      [{ _id: 1, a: 1 }, false],
      [{ _id: 2 }, false],
    ],
  },
  {
    name: 'enum of arrays is ordered',
    schema: { properties: { a: { enum: [[1, 2, '3'], []] } } },
    docs: [
      [{ _id: 0, a: [1, 2, '3'] }, true],
      [{ _id: 1, a: [2, '3', 1] }, false],
      [{ _id: 2, a: [] }, true],
      [{ _id: 3, a: [1] }, false],
    ],
  },
  {
    name: 'enum of objects ignores field order, not extra fields',
    schema: { properties: { a: { enum: [{ name: 'tiny', size: 'large' }] } } },
    docs: [
      [{ _id: 0, a: { name: 'tiny', size: 'large' } }, true],
      [{ _id: 1, a: { size: 'large', name: 'tiny' } }, true],
      [{ _id: 2, a: { name: 'tiny' } }, false],
    ],
  },
  {
    name: 'enum at the root compares the whole document',
    schema: { enum: [{ _id: 0, a: 'str' }, 1, null] },
    docs: [
      [{ _id: 0, a: 'str' }, true],
      [{ _id: 1, a: 'str' }, false],
      [{ _id: 2 }, false],
    ],
  },
  // required.js
  {
    name: 'required at the root',
    schema: { required: ['a', 'b'] },
    docs: [
      [{ _id: 0, a: 1, b: 1, c: 1 }, true],
      [{ _id: 1, a: 1, c: 1 }, false],
      [{ _id: 2, b: { a: 1 } }, false],
      [{ _id: 3, a: null, b: null }, true],
    ],
  },
  {
    name: 'nested required applies to objects only',
    schema: { properties: { a: { required: ['b'] } } },
    docs: [
      [{ _id: 0 }, true],
      [{ _id: 1, a: 1 }, true],
      [{ _id: 2, a: { b: 1 } }, true],
      [{ _id: 3, a: { c: 1 } }, false],
      [{ _id: 4, a: {} }, false],
    ],
  },
  // min_max_properties.js
  {
    name: 'maxProperties 0 matches no document (every document has _id)',
    schema: { maxProperties: 0 },
    docs: [[{ _id: 0 }, false]],
  },
  {
    name: 'minProperties 2 at the root counts _id',
    schema: { minProperties: 2 },
    docs: [
      [{ _id: 0 }, false],
      [{ _id: 1, a: 1 }, true],
    ],
  },
  {
    name: 'maxProperties 2 at the root counts _id',
    schema: { maxProperties: 2 },
    docs: [
      [{ _id: 0, a: 1 }, true],
      [{ _id: 1, a: 1, b: 2 }, false],
    ],
  },
  {
    name: 'nested minProperties and maxProperties',
    schema: { properties: { a: { minProperties: 1, maxProperties: 1 } } },
    docs: [
      [{ _id: 0, a: 1 }, true],
      [{ _id: 1, a: {} }, false],
      [{ _id: 2, a: { b: 1 } }, true],
      [{ _id: 3, a: { b: 1, c: 1 } }, false],
    ],
  },
  // min_max_items.js, array_keywords.js
  {
    name: 'minItems and maxItems at the root have no effect',
    schema: { minItems: 2, maxItems: 0 },
    docs: [[{ _id: 0 }, true]],
  },
  {
    name: 'minItems 2',
    schema: { properties: { a: { minItems: 2 } } },
    docs: [
      [{ _id: 0, a: 1 }, true],
      [{ _id: 1, a: [] }, false],
      [{ _id: 2, a: [2, 'str'] }, true],
      [{ _id: 3, a: [3, 3, 'foo'] }, true],
      [{ _id: 4 }, true],
    ],
  },
  {
    name: 'maxItems 2',
    schema: { properties: { a: { maxItems: 2 } } },
    docs: [
      [{ _id: 0, a: 1 }, true],
      [{ _id: 1, a: [] }, true],
      [{ _id: 2, a: [2, 'str'] }, true],
      [{ _id: 3, a: [3, 3, 'foo'] }, false],
    ],
  },
  // unique_items.js
  {
    name: 'uniqueItems true',
    schema: { properties: { a: { uniqueItems: true } } },
    docs: [
      [{ _id: 0 }, true],
      [{ _id: 1, a: 'foo' }, true],
      [{ _id: 2, a: { foo: [1, 1] } }, true],
      [{ _id: 3, a: [1, 2, 3] }, true],
      [{ _id: 4, a: ['foo', 'FOO'] }, true],
      [{ _id: 5, a: [{}, '', [], null] }, true],
      [
        {
          _id: 6,
          a: [
            [1, 2],
            [2, 1],
          ],
        },
        true,
      ],
      [{ _id: 7, a: [1, 1] }, false],
      [{ _id: 8, a: [1, 1.0] }, false],
      [{ _id: 9, a: ['foo', 'foo'] }, false],
      [{ _id: 10, a: [{ a: 1 }, { a: 1 }] }, false],
      [
        {
          _id: 11,
          a: [
            [1, 2],
            [1, 2],
          ],
        },
        false,
      ],
      [{ _id: 12, a: [null, null] }, false],
      [
        {
          _id: 13,
          a: [
            { x: 1, y: 1 },
            { y: 1, x: 1 },
          ],
        },
        false,
      ],
      [
        {
          _id: 14,
          a: [
            { x: [1, 2], y: 'a' },
            { y: 'a', x: [1, 2] },
          ],
        },
        false,
      ],
    ],
  },
  {
    name: 'uniqueItems false has no effect',
    schema: { properties: { a: { uniqueItems: false } } },
    docs: [[{ _id: 0, a: [1, 1] }, true]],
  },
  // dependencies.js
  {
    name: 'a schema dependency at the root',
    schema: { dependencies: { foo: { required: ['bar'], properties: { baz: { type: 'string' } } } } },
    docs: [
      [{ _id: 0 }, true],
      [{ _id: 1, bar: 1 }, true],
      [{ _id: 2, foo: 1, bar: 1 }, true],
      [{ _id: 3, foo: 1, bar: 1, baz: 1 }, false],
      [{ _id: 4, foo: 1, bar: 1, baz: 'str' }, true],
      [{ _id: 5, foo: 1 }, false],
    ],
  },
  {
    name: 'a property dependency at the root',
    schema: { dependencies: { foo: ['bar', 'baz'] } },
    docs: [
      [{ _id: 0 }, true],
      [{ _id: 1, bar: 1 }, true],
      [{ _id: 2, foo: 1 }, false],
      [{ _id: 3, foo: 1, bar: 1 }, false],
      [{ _id: 4, foo: 1, bar: 1, baz: 1 }, true],
    ],
  },
  {
    name: 'nested property and schema dependencies',
    schema: { properties: { obj: { dependencies: { a: ['b'], c: { required: ['d'] } } } } },
    docs: [
      [{ _id: 0 }, true],
      [{ _id: 1, obj: 1 }, true],
      [{ _id: 2, obj: {} }, true],
      [{ _id: 3, obj: { b: 1, d: 1 } }, true],
      [{ _id: 4, obj: { a: 1, b: 1, c: 1 } }, false],
      [{ _id: 5, obj: { a: 1, c: 0, d: 1 } }, false],
      [{ _id: 6, obj: { a: 1, b: 1, c: 1, d: 1 } }, true],
    ],
  },
  { name: 'empty dependencies match everything', schema: { dependencies: {} }, docs: [[{ _id: 0 }, true]] },
  // The manual's $jsonSchema page, and the keywords' edges.
  {
    // gpa 3 is an int here (JSON has one number type): bsonType double fails it, as noted above.
    name: 'manual: required fields with types, a minimum and an enum',
    schema: {
      required: ['name', 'major', 'gpa', 'address'],
      properties: {
        name: { bsonType: 'string', description: 'must be a string and is required' },
        address: {
          bsonType: 'object',
          required: ['zipcode'],
          properties: { street: { bsonType: 'string' }, zipcode: { bsonType: 'string' } },
        },
        year: { bsonType: 'int', minimum: 2017, maximum: 3017, exclusiveMaximum: false },
        major: { enum: ['Math', 'English', 'Computer Science', 'History', null] },
        gpa: { bsonType: ['double'], minimum: 0 },
      },
    },
    docs: [
      [
        { _id: 0, name: 'Alice', year: 2019, major: 'History', gpa: 3.5, address: { zipcode: '12345' } },
        true,
      ],
      [{ _id: 1, name: 'Bob', year: 2016, major: 'History', gpa: 3.5, address: { zipcode: '12345' } }, false],
      [{ _id: 2, name: 'Carol', major: null, gpa: 3.5, address: { city: 'NYC' } }, false],
      [{ _id: 3, name: 'Dan', major: 'Art', gpa: 3.5, address: { zipcode: '1' } }, false],
      [{ _id: 4, name: 'Eve', major: 'Math', gpa: 3, address: { zipcode: '1' } }, false],
      [{ _id: 5, name: 'Fay', major: 'Math', gpa: 3.25, address: { zipcode: '1' } }, true],
    ],
  },
  {
    name: 'exclusiveMinimum and exclusiveMaximum',
    schema: {
      properties: {
        a: { minimum: 0, exclusiveMinimum: true, maximum: 10, exclusiveMaximum: true },
        b: { minimum: 0, exclusiveMinimum: false, maximum: 10, exclusiveMaximum: false },
      },
    },
    docs: [
      [{ _id: 0, a: 0 }, false],
      [{ _id: 1, a: 10 }, false],
      [{ _id: 2, a: 0.5, b: 0 }, true],
      [{ _id: 3, b: 10 }, true],
      [{ _id: 4, b: 10.5 }, false],
    ],
  },
  {
    name: 'lengths count code points',
    schema: { properties: { s: { minLength: 2, maxLength: 2 } } },
    docs: [
      [{ _id: 0, s: 'é😀' }, true],
      [{ _id: 1, s: '😀' }, false],
      [{ _id: 2, s: 'a😀b' }, false],
    ],
  },
  {
    name: 'multipleOf in decimal',
    schema: { properties: { n: { multipleOf: 0.1 } } },
    docs: [
      [{ _id: 0, n: 0.3 }, true],
      [{ _id: 1, n: 3 }, true],
      [{ _id: 2, n: 0.35 }, false],
      [{ _id: 3, n: 'x' }, true],
    ],
  },
  {
    name: 'pattern follows PCRE: ASCII \\d, $ before a final newline',
    schema: { properties: { s: { pattern: '^\\d+$' } } },
    docs: [
      [{ _id: 0, s: '123' }, true],
      [{ _id: 1, s: '123\n' }, true],
      [{ _id: 2, s: '١٢٣' }, false],
      [{ _id: 3, s: 12 }, true],
    ],
  },
  {
    name: 'fields named like SQL and jsonpath syntax',
    schema: {
      required: ["'; drop table x; --"],
      properties: { "'; drop table x; --": { enum: ['$$ ) || true'] }, 'a.b': { type: 'string' } },
    },
    docs: [
      [{ _id: 0, "'; drop table x; --": '$$ ) || true' }, true],
      [{ _id: 1, "'; drop table x; --": 'x' }, false],
    ],
  },
];
