import { describe, expect, it } from 'vitest';
import { MAX_DOCUMENT_DEPTH, prepareDocument } from '../../db/storage/documents.js';
import type { JsonObject } from '../../mongo/value/json.js';

/** `{"a": {"a": ... 1}}`, `levels` objects deep. */
const nestedObjects = (levels: number) =>
  JSON.parse(`${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`) as JsonObject;
/** `{"a": [[... []]]}`: one object, then `levels - 1` arrays. */
const nestedArrays = (levels: number) =>
  JSON.parse(`{"a":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}}`) as JsonObject;
const path = (first: string, rest: string, count: number) => [first, ...Array(count).fill(rest)].join('.');

describe('prepareDocument: field names and depth', () => {
  it.each([
    ['an empty field name', { '': 1 }, 'The document has an empty field name.'],
    [
      'an empty field name inside an array',
      { a: { b: [1, { '': 1 }] } },
      "The document has an empty field name under 'a.b.1'.",
    ],
    ['a $ field name', { ok: 1, $set: 1 }, "Field names may not start with '$': '$set'."],
    [
      'a nested $ field name',
      { a: [1, { b: { $x: 1 } }] },
      "Field names may not start with '$': 'a.1.b.$x'.",
    ],
    ['a dotted field name', { 'a.b': 1 }, "Field names may not contain '.': 'a.b'."],
    ['a nested dotted field name', { a: [{ 'b.c': 1 }] }, "Field names may not contain '.': 'a.0.b.c'."],
    [
      `${MAX_DOCUMENT_DEPTH + 1} nested objects`,
      nestedObjects(MAX_DOCUMENT_DEPTH + 1),
      `The document is nested deeper than ${MAX_DOCUMENT_DEPTH} levels (at '${path('a', 'a', MAX_DOCUMENT_DEPTH - 1)}').`,
    ],
    [
      `an object and ${MAX_DOCUMENT_DEPTH} nested arrays`,
      nestedArrays(MAX_DOCUMENT_DEPTH + 1),
      `The document is nested deeper than ${MAX_DOCUMENT_DEPTH} levels (at '${path('a', '0', MAX_DOCUMENT_DEPTH - 1)}').`,
    ],
  ])('refuses %s, naming where', (_label, doc, message) => {
    expect(() => prepareDocument(doc as JsonObject)).toThrow(message);
  });

  it.each([
    ['a $ inside a name, not leading', { a$b: 1, c: { d$: [{ e: 1 }] } }],
    [`${MAX_DOCUMENT_DEPTH} nested objects`, nestedObjects(MAX_DOCUMENT_DEPTH)],
    [`an object and ${MAX_DOCUMENT_DEPTH - 1} nested arrays`, nestedArrays(MAX_DOCUMENT_DEPTH)],
    ['$ and . in values', { a: '$x.y', b: ['$', '.'] }],
  ])('accepts %s', (_label, doc) => {
    expect(() => prepareDocument(doc as JsonObject)).not.toThrow();
  });
});
