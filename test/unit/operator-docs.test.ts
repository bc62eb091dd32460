// The operators the grammar accepts and the lists users read stay one list: the README's overview,
// docs/storage.md and the Documents tag of openapi.yaml each name every supported query and update
// operator, and no operator the parser would refuse.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { QueryError } from '../../errors.js';
import { parseFilter, SUPPORTED_QUERY_OPERATORS } from '../../mongo/filter/parse.js';
import { SUPPORTED_UPDATE_OPERATORS } from '../../mongo/update/update.js';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

/** The text from `start` to the next occurrence of `end` after it. */
function between(text: string, start: string, end: string): string {
  const from = text.indexOf(start);
  if (from < 0) throw new Error(`'${start}' not found`);
  const to = text.indexOf(end, from + start.length);
  return text.slice(from + start.length, to < 0 ? undefined : to);
}

/** Every `$name` in a text. */
function operators(text: string): Set<string> {
  return new Set([...text.matchAll(/(?<![\w$])\$[A-Za-z]+/g)].map((m) => m[0]));
}

/** Modifiers and options documented beside the operators they belong to. */
const MODIFIERS = ['$each', '$slice', '$position', '$sort'];

const documents: [string, { filter: string; update: string }][] = [
  [
    'README.md',
    {
      filter: between(read('README.md'), '- Filter:', '\n- Update:'),
      update: between(read('README.md'), '- Update:', ', or a replacement'),
    },
  ],
  [
    'docs/storage.md',
    {
      filter: between(read('docs/storage.md'), '- Filter:', '\n- Update:'),
      update: between(read('docs/storage.md'), '- Update:', ', or a replacement'),
    },
  ],
  [
    'openapi.yaml (Documents tag)',
    {
      filter: between(read('openapi.yaml'), '**Filter** (`query`):', '`$type` names'),
      update: between(read('openapi.yaml'), '**Update** (`doc`):', ', or a replacement'),
    },
  ],
];

describe.each(documents)('the operators listed in %s', (_name, lists) => {
  it('are the supported query operators', () => {
    expect([...operators(lists.filter)].sort()).toEqual([...SUPPORTED_QUERY_OPERATORS].sort());
  });

  it('are the supported update operators, with the modifiers of $push and $addToSet', () => {
    const listed = [...operators(lists.update)].filter((op) => !MODIFIERS.includes(op));
    expect(listed.sort()).toEqual([...SUPPORTED_UPDATE_OPERATORS].sort());
  });
});

/**
 * MongoDB's query operators (its manual's "Query Predicates" list): each is supported or listed as
 * not supported, so the lists cannot forget one nor call a supported one unsupported.
 */
const MONGODB_QUERY_OPERATORS = [
  ...['$eq', '$gt', '$gte', '$in', '$lt', '$lte', '$ne', '$nin'],
  ...['$and', '$not', '$nor', '$or', '$exists', '$type'],
  ...['$expr', '$jsonSchema', '$mod', '$regex', '$text', '$where'],
  ...['$geoIntersects', '$geoWithin', '$near', '$nearSphere'],
  ...['$all', '$elemMatch', '$size', '$bitsAllClear', '$bitsAllSet', '$bitsAnyClear', '$bitsAnySet'],
  '$comment',
];

const unsupported: [string, Set<string>][] = [
  ['README.md', operators(between(read('README.md'), '- Not supported:', '\n'))],
  ['openapi.yaml (Documents tag)', operators(between(read('openapi.yaml'), 'Not supported:', '. These'))],
];

describe.each(unsupported)('the operators %s calls not supported', (_name, listed) => {
  it("are no supported operator, and with the supported ones make up MongoDB's query operators", () => {
    expect(listed.size).toBeGreaterThan(0);
    for (const op of listed) expect(SUPPORTED_QUERY_OPERATORS as readonly string[], op).not.toContain(op);
    for (const op of MONGODB_QUERY_OPERATORS)
      expect(listed.has(op) || (SUPPORTED_QUERY_OPERATORS as readonly string[]).includes(op), op).toBe(true);
  });

  it('are each refused with a QueryError naming them, at the top and on a field', () => {
    for (const op of listed) {
      for (const query of [{ [op]: {} }, { a: { [op]: {} } }]) {
        expect(() => parseFilter(query), JSON.stringify(query)).toThrow(QueryError);
        expect(() => parseFilter(query), JSON.stringify(query)).toThrow(op);
      }
    }
  });
});
