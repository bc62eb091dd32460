import { randomBytes } from 'node:crypto';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { escapePointer } from '../../errors.js';
import { loadSpec, type SpecOperation, specOperations } from '../../http/spec.js';
import { type RequestOptions, startTestAppOnOwnDatabase, type TestApp } from '../helpers/app.js';
import {
  createWhatTheExampleNeeds,
  exampleRequest,
  oidcTokenOf,
  type SampleIds,
} from '../helpers/examples.js';

/**
 * Hostile input, generated from openapi.yaml: every operation gets its valid example request
 * mutated in every way the generator knows (wrong types, missing and extra fields, huge and empty
 * strings, deep nesting, long arrays, bytes that are not UTF-8, NUL, surrogates, numbers out of
 * range, path parameters with quotes, slashes, %00 and SQL, query operators that run code or do
 * not exist, bad and huge regexes, bodies that are not JSON or not declared as JSON), each sent with
 * a valid, an invalid and no token.
 *
 * Every mutant must be refused: a 4xx that openapi.yaml declares for the operation, with a body
 * matching its schema (the test app checks every response against the spec). A snapshot of the
 * whole database taken before and after shows that nothing was written. Only requests that must be
 * refused are sent: a schema mutant is kept only if the spec's own schema rejects it, and the
 * other mutants break rules the server documents (operators, limits, encodings).
 */

const spec = loadSpec();
const ops = specOperations(spec);
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

let t: TestApp;
let workplace: string;
let ids: SampleIds;
let oidcToken: string;

beforeAll(async () => {
  // A database of its own, so that the snapshot sees only what this file's requests could change.
  t = await startTestAppOnOwnDatabase('hostile');
  workplace = await t.createWorkplace();
  // Everything some example acts on, in one workplace: a client, a connector, a scoped token, the
  // users collection with its byEmail index, and a user.
  ids = await createWhatTheExampleNeeds(
    t,
    {
      operationId: 'setUserPassword',
      path: '/oidc/{name}/connectors/{id}/{token_id}/storages/{storage_name}/indexes/{index_name}',
    } as SpecOperation,
    workplace,
  );
  oidcToken = await oidcTokenOf(t, workplace);
}, 120_000);
afterAll(async () => {
  await t?.close();
});

// ---------------------------------------------------------------------------------------------
// The database snapshot

async function snapshot(): Promise<Record<string, string>> {
  const tables = await t.sql<{ name: string }[]>`
    select format('%I.%I', table_schema, table_name) as name from information_schema.tables
    where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')
    order by 1`;
  const out: Record<string, string> = {};
  for (const { name } of tables) {
    const [row] = await t.sql.unsafe<{ h: string }[]>(
      `select count(*) || ':' || md5(coalesce(string_agg(x::text, E'\\n' order by x::text), '')) as h from ${name} x`,
    );
    out[name] = row?.h ?? '';
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Mutants

interface Mutant {
  what: string;
  method: string;
  url: string;
  body?: unknown;
  /** A raw body, sent as is, with `contentType`. */
  payload?: string | Buffer;
  contentType?: string;
}

const ajv = new Ajv2020({ strict: false, allErrors: false });
addFormats(ajv);
ajv.addSchema(spec as object, 'openapi');
const bodyValidators = new Map<string, ValidateFunction | undefined>();

/** The spec's schema of the operation's JSON body, compiled as the server does. */
function bodySchema(op: SpecOperation): ValidateFunction | undefined {
  if (!bodyValidators.has(op.operationId)) {
    const operation = (spec.paths[op.path] as Record<string, { requestBody?: unknown }>)[
      op.method.toLowerCase()
    ];
    const pointer = `#/paths/${escapePointer(op.path)}/${op.method.toLowerCase()}/requestBody/content/application~1json/schema`;
    bodyValidators.set(
      op.operationId,
      operation?.requestBody ? ajv.compile({ $ref: `openapi${pointer}` }) : undefined,
    );
  }
  return bodyValidators.get(op.operationId);
}

const nested = (depth: number, leaf: unknown = 1): unknown => {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
};

/** Values that break most schemas somewhere: wrong types, extremes, encodings, injection. */
const HOSTILE_VALUES: [string, unknown][] = [
  ['null', null],
  ['true', true],
  ['zero', 0],
  ['-1', -1],
  ['a fraction', 1.5],
  ['1e308', 1e308],
  ['-1e308', -1e308],
  ['2^53 + 1', 2 ** 53 + 1],
  ['an empty string', ''],
  ['a 70,000-character string', 'x'.repeat(70_000)],
  ['NUL', '\u0000'],
  ['a lone surrogate', '\ud800'],
  ['"NaN"', 'NaN'],
  ['"Infinity"', 'Infinity'],
  ['"1e999"', '1e999'],
  ['SQL', "'; drop table workplaces; --"],
  ['an empty array', []],
  ['[null]', [null]],
  ['a 20,000-element array', Array.from({ length: 20_000 }, (_, i) => i)],
  ['an empty object', {}],
  ['$where', { $where: 'sleep(10000)' }],
  ['an object nested 60 deep', nested(60)],
  ['a string array', ['a', 'b']],
];

/** Path segments that are no valid name, id or anything else that exists. */
const HOSTILE_SEGMENTS: [string, string][] = [
  ['a quote', "'"],
  ['SQL', encodeURIComponent("x' or '1'='1")],
  ['a drop', encodeURIComponent("'; drop table workplaces; --")],
  ['an encoded slash', 'a%2Fb'],
  ['a traversal', '..%2F..%2Fetc%2Fpasswd'],
  ['%00', '%00'],
  ['an embedded %00', 'users%00x'],
  ['a bad escape', '%ZZ'],
  ['bytes that are not UTF-8', '%C3%28'],
  ['an emoji', '%F0%9F%98%80'],
  ['5,000 characters', 'x'.repeat(5000)],
  ['$where', encodeURIComponent('$where')],
  ['JSON', encodeURIComponent('{"$gt":""}')],
  ['NaN', 'NaN'],
  ['-1', '-1'],
  ['markup', encodeURIComponent('<script>alert(1)</script>')],
];

function urlWith(op: SpecOperation, valid: string, param: string, segment: string): string {
  const template = op.path.split('/');
  const parts = valid.split('?')[0]?.split('/') ?? [];
  const i = template.indexOf(`{${param}}`);
  parts[i] = segment;
  const query = valid.includes('?') ? `?${valid.split('?')[1]}` : '';
  return parts.join('/') + query;
}

/** Queries the server must refuse: code, unknown operators at every depth, bad regexes, limits. */
const HOSTILE_QUERIES: [string, unknown][] = [
  ['$where', { $where: 'this.a == 1' }],
  ['$function', { $function: { body: 'function () { return true }', args: [], lang: 'js' } }],
  ['$expr with code', { $expr: { $function: { body: 'return 1', args: [], lang: 'js' } } }],
  ['$accumulator', { $expr: { $accumulator: {} } }],
  [
    'an unknown expression operator 20 deep in $expr',
    {
      $expr: Array.from({ length: 20 }).reduce<unknown>((e) => ({ $add: [1, e] }), { $nope: 1 }),
    },
  ],
  ['$expr nested 40 deep', { $expr: Array.from({ length: 40 }).reduce<unknown>((e) => ({ $abs: e }), '$a') }],
  ['$expr with 1,001 parts', { $expr: { $add: Array.from({ length: 1001 }, (_, i) => i) } }],
  ['$expr with a huge string operand', { $expr: { $concat: ['x'.repeat(100_000), { $nope: 1 }] } }],
  ['$expr inside $elemMatch', { tags: { $elemMatch: { $expr: { $eq: ['$a', 1] } } } }],
  ['$expr with an undefined variable', { $expr: { $eq: ['$$nope', 1] } }],
  ['an unknown top-level operator', { $foo: 1 }],
  ['an unknown field operator', { email: { $foo: 1 } }],
  ['an unknown operator in $and', { $and: [{ email: { $bar: 1 } }] }],
  ['an unknown operator in $or/$nor', { $or: [{ $nor: [{ email: { $baz: 1 } }] }] }],
  ['an unknown operator in $elemMatch', { tags: { $elemMatch: { $qux: 1 } } }],
  ['an unknown operator in $not', { email: { $not: { $zap: 1 } } }],
  [
    'an unknown operator under 12 logical operators',
    Array.from({ length: 12 }).reduce<unknown>(
      (q, _, i) => ({ [['$and', '$or', '$nor'][i % 3] as string]: [q] }),
      {
        email: { $nope: 1 },
      },
    ),
  ],
  ['$and nested 40 deep', Array.from({ length: 40 }).reduce<unknown>((q) => ({ $and: [q] }), { a: 1 })],
  ['1,001 conditions', { $or: Array.from({ length: 1001 }, (_, i) => ({ [`f${i}`]: i })) }],
  ['$in with 1,001 values', { email: { $in: Array.from({ length: 1001 }, (_, i) => i) } }],
  ['$and not an array', { $and: { a: 1 } }],
  ['$or empty', { $or: [] }],
  ['an unbalanced regex', { email: { $regex: '(' } }],
  ['a reversed range', { email: { $regex: '[z-a]' } }],
  ['unknown regex options', { email: { $regex: 'a', $options: 'q' } }],
  ['a 5,000-character regex', { email: { $regex: 'a'.repeat(5000) } }],
  ['$options without $regex', { email: { $options: 'i' } }],
  ['$size negative', { tags: { $size: -1 } }],
  ['$size not a number', { tags: { $size: 'two' } }],
  ['$type unknown', { email: { $type: 'nope' } }],
  ['$mod by zero', { n: { $mod: [0, 1] } }],
  ['$mod malformed', { n: { $mod: [1] } }],
  ['$exists an object', { email: { $exists: { a: 1 } } }],
  ['$all not an array', { tags: { $all: 1 } }],
  ['$in not an array', { email: { $in: 'a' } }],
  ['a field path with an empty segment', { 'a..b': 1 }],
  ['a field path 1,025 characters long', { ['a'.repeat(1025)]: 1 }],
  ['NUL in a regex', { email: { $regex: 'a\u0000' } }],
  ['$jsonSchema with $ref', { $jsonSchema: { properties: { email: { $ref: '#/definitions/e' } } } }],
  [
    '$jsonSchema nested 40 deep',
    { $jsonSchema: Array.from({ length: 40 }).reduce<unknown>((s) => ({ not: s }), {}) },
  ],
  ['$jsonSchema enum of 1,001 values', { $jsonSchema: { enum: Array.from({ length: 1001 }, (_, i) => i) } }],
  ['$jsonSchema with an unbalanced pattern', { $jsonSchema: { properties: { email: { pattern: '(' } } } }],
];

const HOSTILE_UPDATES: [string, unknown][] = [
  ['$where', { $where: 'x' }],
  ['an unknown operator', { $unknown: { a: 1 } }],
  ['operators mixed with fields', { $set: { a: 1 }, b: 2 }],
  ['a $-prefixed field name', { $set: { $x: 1 } }],
  ['an empty path segment', { $set: { 'a..b': 1 } }],
  ['changing _id', { $set: { _id: 'other' } }],
  ['$inc of a string field', { $inc: { email: 1 } }],
  ['$inc by a string', { $inc: { n: 'one' } }],
  ['$push to a string field', { $push: { email: 1 } }],
  ['$rename onto itself', { $rename: { email: 'email' } }],
  ['one path set twice', { $set: { a: 1, 'a.b': 2 } }],
  ['a value nested 150 deep', { $set: { a: nested(150) } }],
  ['NUL in a value', { $set: { a: '\u0000' } }],
  ['a lone surrogate in a value', { $set: { a: '\ud800' } }],
];

/** Replacement documents (replace-one, find-one-and-replace) that must be refused. */
const HOSTILE_REPLACEMENTS: [string, unknown][] = [
  ['update operators', { $set: { a: 1 } }],
  ['operators mixed with fields', { a: 1, $set: { b: 2 } }],
  ['a $-prefixed field deeper', { a: { $x: 1 } }],
  ['a dotted field name', { 'a.b': 1 }],
  ['changing _id', { _id: 'other' }],
  ['an array _id', { _id: [1] }],
  ['a value nested 150 deep', { a: nested(150) }],
  ['NUL in a value', { a: '\u0000' }],
  ['a lone surrogate in a value', { a: '\ud800' }],
];

const HOSTILE_SORTS: [string, unknown][] = [
  ['direction 2', { email: 2 }],
  ['a $ path', { $natural: 1 }],
];

const HOSTILE_FIELDS: [string, unknown][] = [
  ['inclusion mixed with exclusion', { email: 1, name: 0 }],
  ['a $ path', { $where: 1 }],
];

const HOSTILE_DOCS: [string, unknown][] = [
  ['an array _id', [{ _id: [1] }]],
  ['a 2,000-character _id', [{ _id: 'x'.repeat(2000) }]],
  ['a $-prefixed field', [{ $bad: 1 }]],
  ['the same _id twice', [{ _id: 'twice' }, { _id: 'twice' }]],
  ['an _id that exists', [{ _id: 'ada' }]],
  ['NUL in a value', [{ a: '\u0000' }]],
  ['a lone surrogate', [{ a: '\ud800' }]],
  ['a document nested 150 deep', [{ a: nested(150) }]],
  ['a valid document after a bad one', [{ _id: 'fine' }, { _id: [2] }]],
];

const STORAGE_FIELDS: Record<string, [string, [string, unknown][]][]> = {
  readDocuments: [
    ['query', HOSTILE_QUERIES],
    ['sort', HOSTILE_SORTS],
    ['fields', HOSTILE_FIELDS],
  ],
  countDocuments: [['query', HOSTILE_QUERIES]],
  distinctValues: [
    ['query', HOSTILE_QUERIES],
    [
      'key',
      [
        ['an empty key', ''],
        ['a $ key', '$where'],
        ['a positional key', 'email.$'],
        ['an empty segment', 'a..b'],
        ['a 2,000-character key', 'a'.repeat(2000)],
        ['NUL in a key', 'a\u0000b'],
      ],
    ],
  ],
  aggregateDocuments: [
    [
      'pipeline',
      [
        ['an unknown stage', [{ $where: 'sleep(1)' }]],
        ['a stage with two fields', [{ $match: {}, $limit: 1 }]],
        ['a hostile $match', [{ $match: { $where: '1' } }]],
        ['$out', [{ $out: 'x' }]],
        ['a $lookup pipeline', [{ $lookup: { from: 'x', pipeline: [], as: 'y' } }]],
        ['a $-prefixed $group field', [{ $group: { _id: null, $x: { $sum: 1 } } }]],
        ['an undefined variable', [{ $project: { a: '$$NOW_X' } }]],
        ['51 stages', Array.from({ length: 51 }, () => ({ $skip: 0 }))],
        ['a $facet in a $facet', [{ $facet: { a: [{ $facet: { b: [] } }] } }]],
        ['a NUL field name', [{ $project: { 'a\u0000b': 1 } }]],
        ['a huge $limit', [{ $limit: 1e300 }]],
      ],
    ],
  ],
  deleteDocuments: [['query', HOSTILE_QUERIES]],
  updateDocuments: [
    ['query', HOSTILE_QUERIES],
    ['doc', HOSTILE_UPDATES],
  ],
  updateOneDocument: [
    ['query', HOSTILE_QUERIES],
    ['doc', [...HOSTILE_UPDATES, ['a replacement document', { email: 'x' }]]],
    ['sort', HOSTILE_SORTS],
  ],
  replaceOneDocument: [
    ['query', HOSTILE_QUERIES],
    ['doc', HOSTILE_REPLACEMENTS],
    ['sort', HOSTILE_SORTS],
  ],
  deleteOneDocument: [
    ['query', HOSTILE_QUERIES],
    ['sort', HOSTILE_SORTS],
  ],
  findOneAndUpdate: [
    ['query', HOSTILE_QUERIES],
    ['doc', [...HOSTILE_UPDATES, ['a replacement document', { email: 'x' }]]],
    ['sort', HOSTILE_SORTS],
    ['fields', HOSTILE_FIELDS],
  ],
  findOneAndReplace: [
    ['query', HOSTILE_QUERIES],
    ['doc', HOSTILE_REPLACEMENTS],
    ['sort', HOSTILE_SORTS],
    ['fields', HOSTILE_FIELDS],
  ],
  findOneAndDelete: [
    ['query', HOSTILE_QUERIES],
    ['sort', HOSTILE_SORTS],
    ['fields', HOSTILE_FIELDS],
  ],
  createDocuments: [['docs', HOSTILE_DOCS]],
};

/** Raw bodies that are not JSON, or not what they claim to be. */
const HOSTILE_PAYLOADS: [string, string | Buffer, string][] = [
  ['truncated JSON', '{"a":', 'application/json'],
  ['not JSON', 'hello', 'application/json'],
  ['trailing garbage', '{}}', 'application/json'],
  ['JSON nested 10,000 deep', `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`, 'application/json'],
  ['an array nested 10,000 deep', `${'['.repeat(10_000)}${']'.repeat(10_000)}`, 'application/json'],
  ['__proto__', '{"__proto__":{"polluted":true}}', 'application/json'],
  ['constructor.prototype', '{"constructor":{"prototype":{"polluted":true}}}', 'application/json'],
  ['JSON as text/plain', '{}', 'text/plain'],
  ['a form', 'a=1&b=2', 'application/x-www-form-urlencoded'],
  ['XML', '<a>1</a>', 'application/xml'],
  [
    'multipart',
    '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--x--',
    'multipart/form-data; boundary=x',
  ],
  ['problem+json', '{}', 'application/problem+json'],
  ['17 MiB', `{"a":"${'x'.repeat(17 * 1024 * 1024)}"}`, 'application/json'],
];

/** The names of the query parameters an operation declares. */
function queryParameters(op: SpecOperation): string[] {
  const operation = (spec.paths[op.path] as Record<string, { parameters?: { in: string; name: string }[] }>)[
    op.method.toLowerCase()
  ];
  return (operation?.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
}

function* mutantsOf(op: SpecOperation): Generator<Mutant> {
  const valid = exampleRequest(op, workplace, ids);
  const method = valid.method;
  const params = [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1] as string);
  for (const param of params) {
    for (const [what, segment] of HOSTILE_SEGMENTS) {
      yield {
        what: `path ${param}: ${what}`,
        method,
        url: urlWith(op, valid.url, param, segment),
        body: valid.body,
      };
    }
  }
  if (valid.url.includes('?client_id=')) {
    for (const [what, segment] of HOSTILE_SEGMENTS) {
      yield {
        what: `client_id: ${what}`,
        method,
        url: valid.url.replace(/client_id=[^&]*/, `client_id=${segment}`),
      };
    }
  }
  // The operation's own query parameters (client_id aside, above), each given every hostile
  // segment and the numbers just outside its range.
  for (const name of queryParameters(op)) {
    if (name === 'client_id') continue;
    const values: [string, string][] = [...HOSTILE_SEGMENTS, ['0', '0'], ['1001', '1001'], ['1.5', '1.5']];
    for (const [what, segment] of values) {
      const sep = valid.url.includes('?') ? '&' : '?';
      yield { what: `query ${name}: ${what}`, method, url: `${valid.url}${sep}${name}=${segment}` };
    }
  }
  const validate = bodySchema(op);
  if (!validate) return;
  const base = (valid.body ?? {}) as Record<string, unknown>;
  // Schema mutants, kept only when the spec's schema refuses them.
  const candidates: [string, unknown][] = [
    ['a body of null', null],
    ['an array body', []],
    ['a string body', 'x'],
    ['a number body', 1],
    ['an unknown field', { ...base, unexpected: 1 }],
    ['a $where field', { ...base, $where: '1' }],
  ];
  for (const key of Object.keys(base)) {
    const { [key]: _dropped, ...without } = base;
    candidates.push([`${key} missing`, without]);
    for (const [what, value] of HOSTILE_VALUES)
      candidates.push([`${key}: ${what}`, { ...base, [key]: value }]);
    const inner = base[key];
    if (inner && typeof inner === 'object' && !Array.isArray(inner)) {
      for (const innerKey of Object.keys(inner)) {
        for (const [what, value] of HOSTILE_VALUES) {
          candidates.push([
            `${key}.${innerKey}: ${what}`,
            { ...base, [key]: { ...inner, [innerKey]: value } },
          ]);
        }
      }
    }
  }
  for (const [what, body] of candidates) {
    if (!validate(body)) yield { what, method, url: valid.url, body };
  }
  for (const [field, values] of STORAGE_FIELDS[op.operationId] ?? []) {
    for (const [what, value] of values) {
      // Update operators fail on the documents they meet: match them all (the user is one).
      const body = field === 'doc' ? { ...base, query: {}, doc: value } : { ...base, [field]: value };
      yield { what: `${field}: ${what}`, method, url: valid.url, body };
    }
  }
  for (const [what, payload, contentType] of HOSTILE_PAYLOADS) {
    yield { what, method, url: valid.url, payload, contentType };
  }
  // The valid body with its first number beyond a double's range: parsed, it would be Infinity,
  // and stored as null.
  const withHugeNumber = JSON.stringify(
    op.operationId === 'createDocuments' ? { docs: [{ n: 1 }] } : base,
  ).replace(/:-?\d+(\.\d+)?(?=[,}\]])/, ':1e999');
  if (withHugeNumber.includes('1e999')) {
    yield {
      what: 'a number beyond a double',
      method,
      url: valid.url,
      payload: withHugeNumber,
      contentType: 'application/json',
    };
  }
  // The valid body with two bytes that are not UTF-8 inside its last string: decoded leniently it
  // would still be valid, and U+FFFD would be stored in their place.
  const text = JSON.stringify(base);
  const end = text.lastIndexOf('"');
  if (end > 0) {
    const payload = Buffer.concat([
      Buffer.from(text.slice(0, end)),
      Buffer.from([0xff, 0xfe]),
      Buffer.from(text.slice(end)),
    ]);
    yield {
      what: 'bytes that are not UTF-8 in a string',
      method,
      url: valid.url,
      payload,
      contentType: 'application/json',
    };
  }
}

type Credentials = 'valid' | 'invalid' | 'none';
const CREDENTIALS: Credentials[] = ['valid', 'invalid', 'none'];

function requestOf(op: SpecOperation, m: Mutant, credentials: Credentials): RequestOptions {
  const oidc = op.path.startsWith('/oidc/');
  const secret =
    credentials === 'valid'
      ? oidc
        ? oidcToken
        : t.adminToken
      : `wpa_${randomBytes(32).toString('base64url')}`;
  const headers: Record<string, string> = {};
  if (m.contentType) headers['content-type'] = m.contentType;
  if (oidc && credentials !== 'none') headers.authorizarion = `Bearer ${secret}`;
  return {
    method: m.method as RequestOptions['method'],
    url: m.url,
    token: oidc || credentials === 'none' ? null : secret,
    headers,
    ...(m.payload !== undefined ? { payload: m.payload } : m.body !== undefined ? { body: m.body } : {}),
  };
}

describe('hostile input generated from openapi.yaml', () => {
  it('is refused with a documented 4xx, and nothing is written', async () => {
    const before = await snapshot();
    const failures: string[] = [];
    const counts = { sent: 0, byStatus: {} as Record<number, number> };
    for (const op of ops) {
      // A workplace is created by name in the body, and a new one would be a change: every
      // mutant of createWorkplace must be refused too, so it is fuzzed like the others.
      for (const mutant of mutantsOf(op)) {
        for (const credentials of CREDENTIALS) {
          const label = `${op.operationId} [${credentials} token] ${mutant.what}`;
          counts.sent++;
          try {
            const res = await t.request(requestOf(op, mutant, credentials));
            counts.byStatus[res.status] = (counts.byStatus[res.status] ?? 0) + 1;
            if (res.status < 400 || res.status >= 500)
              failures.push(`${label}: ${res.status} ${res.text.slice(0, 200)}`);
          } catch (err) {
            // The response broke the contract (an undeclared status or a body off its schema).
            failures.push(`${label}: ${(err as Error).message.slice(0, 300)}`);
          }
        }
      }
    }
    expect(failures.slice(0, 40), `${failures.length} of ${counts.sent} mutants`).toEqual([]);
    expect(counts.sent).toBeGreaterThanOrEqual(5000);
    expect(await snapshot()).toEqual(before);
  }, 600_000);

  // Valid patterns that make a backtracking engine (JavaScript's, PCRE's) take exponential time. The
  // server never runs a client's regex in JavaScript, and PostgreSQL's engine does not backtrack on
  // these: they are valid queries, answered at once.
  it.each(['(a+)+$', '(a|aa)*c', '^(a|a?)+$', '^(a?){30}a{30}$', '(x+x+)+y', '(.*a){25}$'])(
    'answers the catastrophic regex %s at once',
    async (pattern) => {
      const url = `/v1/workplaces/${workplace}/storages/users`;
      await t.request({ method: 'POST', url: `${url}/delete`, body: { query: { _id: 'long' } } });
      const created = await t.request({
        method: 'POST',
        url: `${url}/create`,
        body: { docs: [{ _id: 'long', s: `${'a'.repeat(5000)}!` }] },
      });
      expect(created.status).toBe(201);
      const started = Date.now();
      const res = await t.request({
        method: 'POST',
        url: `${url}/count`,
        body: { query: { s: { $regex: pattern } } },
      });
      expect(res.status, res.text).toBe(200);
      expect(res.body.result.count).toBe(0);
      expect(Date.now() - started).toBeLessThan(5_000);
    },
  );
});
