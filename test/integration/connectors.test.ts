import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSpec } from '../../http/spec.js';
import { startTestApp, type TestApp, type TestResponse } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

// biome-ignore lint/suspicious/noExplicitAny: connectors are arbitrary nested JSON in these tests
type Json = any;

/** The spec's own example: four methods, nested input and output mappings, every presenter field. */
const EXAMPLE: Json = (loadSpec().components as unknown as { examples: Record<string, { value: Json }> })
  .examples.Connector?.value;

const url = (workplace: string, id?: string) =>
  `/v1/workplaces/${workplace}/connectors${id === undefined ? '' : `/${id}`}`;

const list = (wp: string) => t.request({ method: 'GET', url: url(wp) });
const create = (wp: string, body: unknown) => t.request({ method: 'POST', url: url(wp), body });
const update = (wp: string, id: string, body: unknown) =>
  t.request({ method: 'POST', url: url(wp, id), body });
const remove = (wp: string, id: string) => t.request({ method: 'DELETE', url: url(wp, id) });

async function created(wp: string, body: Json = EXAMPLE) {
  const res = await create(wp, body);
  expect(res.status, res.text).toBe(201);
  return res.body.result;
}

const MINIMAL = { name: 'Minimal', version: '1', methods: [], dataMapping: { input: {}, output: {} } };

/** A connector with one method `m` whose input is `node`. */
const withInput = (node: Json) => ({
  name: 'X',
  version: '1',
  methods: [{ title: 'M', value: 'm', http_methods: ['POST'] }],
  dataMapping: { input: { m: node }, output: {} },
});

function nested(depth: number): Json {
  let node: Json = { type: 'string' };
  for (let i = 1; i < depth; i++) node = { type: 'object', properties: { f: node } };
  return node;
}

function expectValidation(res: TestResponse, path: string) {
  expect(res.status, res.text).toBe(400);
  expect(res.body.code).toBe('VALIDATION_FAILED');
  expect(res.body.errors).toContainEqual(expect.objectContaining({ in: 'body', path }));
}

describe('a realistic connector round-trips unchanged', () => {
  it('through create -> list -> update -> list -> delete', async () => {
    const wp = await t.createWorkplace();
    expect((await list(wp)).body).toEqual({ items: [] });

    const res = await create(wp, EXAMPLE);
    expect(res.status, res.text).toBe(201);
    const { id } = res.body.result;
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(res.body).toEqual({ result: { id, ...EXAMPLE } });
    expect((await list(wp)).body).toEqual({ items: [{ id, ...EXAMPLE }] });

    const changed = structuredClone(EXAMPLE);
    changed.version = '2.4.0-beta.1';
    changed.methods.push({ title: 'Merge contacts', value: 'mergeContacts', http_methods: ['POST'] });
    changed.dataMapping.input.mergeContacts = {
      type: 'object',
      properties: {
        ids: { type: 'array', items: { type: 'string' }, presenter: { multi: true, default: [] } },
      },
    };
    changed.dataMapping.input.createContact.properties.address.properties.country.presenter.default = null;
    changed.dataMapping.input.createContact.properties.name.presenter.visible = { role: ['admin', 'sales'] };
    delete changed.dataMapping.output.createContact;
    const updated = await update(wp, id, changed);
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body).toEqual({ result: { id, ...changed } });
    expect((await list(wp)).body).toEqual({ items: [{ id, ...changed }] });

    const deleted = await remove(wp, id);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await list(wp)).body).toEqual({ items: [] });
  });

  it('keeps the order of keys as sent, which is the order of form fields', async () => {
    const wp = await t.createWorkplace();
    const fields = ['zeta', 'alpha', 'middle', 'b', 'aaaaaaaaaaaaaaaa'];
    const node = {
      type: 'object',
      properties: Object.fromEntries(fields.map((f) => [f, { type: 'string' }])),
    };
    await created(wp, withInput(node));
    const listed = (await list(wp)).body.items[0];
    expect(Object.keys(listed.dataMapping.input.m.properties)).toEqual(fields);
    expect(Object.keys(listed)).toEqual([
      'id',
      'name',
      'description',
      'image',
      'owner',
      'version',
      'methods',
      'dataMapping',
    ]);
  });

  it('keeps presenter values of every JSON type exactly', async () => {
    const wp = await t.createWorkplace();
    const presenter = {
      title: 'Ünïcødé ✓',
      desc: 'line\nbreak "quoted" \\ backslash',
      component: 'select',
      visible: { a: { b: [1, 2.5, 0, 1e21, -1e-7, true, null] } },
      tags: [],
      order: -7,
      multi: true,
      default: { nested: [{ deep: 'value' }], n: 0.1 },
      values: [1, 'two', { three: 3 }, [4], null, false],
    };
    const body = withInput({ type: 'object', properties: { f: { type: 'string', presenter } } });
    const c = await created(wp, body);
    expect(c.dataMapping.input.m.properties.f.presenter).toEqual(presenter);
    expect((await list(wp)).body.items[0].dataMapping.input.m.properties.f.presenter).toEqual(presenter);
  });
});

describe('defaults, owner and version', () => {
  it('fills description, image and owner when left out', async () => {
    const wp = await t.createWorkplace();
    const c = await created(wp, MINIMAL);
    expect(c).toEqual({ id: c.id, ...MINIMAL, description: '', image: '', owner: 'admin' });
  });

  it('accepts an empty image and keeps a given owner', async () => {
    const wp = await t.createWorkplace();
    const c = await created(wp, { ...MINIMAL, image: '', owner: 'team-crm' });
    expect(c).toMatchObject({ image: '', owner: 'team-crm' });
  });

  it('replaces the whole connector on update, keeping id and the stored owner', async () => {
    const wp = await t.createWorkplace();
    const c = await created(wp, { ...MINIMAL, description: 'old', image: 'img.png', owner: 'team-crm' });
    const res = await update(wp, c.id, { ...MINIMAL, name: 'Renamed', version: '2' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.result).toEqual({
      ...MINIMAL,
      id: c.id,
      name: 'Renamed',
      version: '2',
      description: '',
      image: '',
      owner: 'team-crm',
    });
    const reowned = await update(wp, c.id, { ...MINIMAL, owner: 'team-sales' });
    expect(reowned.body.result.owner).toBe('team-sales');
  });

  it('stores version as given, without checking or incrementing it', async () => {
    const wp = await t.createWorkplace();
    const c = await created(wp, { ...MINIMAL, version: 'v7 (March build)' });
    expect(c.version).toBe('v7 (March build)');
    const same = await update(wp, c.id, { ...MINIMAL, version: 'v7 (March build)' });
    expect(same.body.result.version).toBe('v7 (March build)');
    const older = await update(wp, c.id, { ...MINIMAL, version: '0.1' });
    expect(older.body.result.version).toBe('0.1');
  });

  it('accepts the listed connector posted back as is (with its id)', async () => {
    const wp = await t.createWorkplace();
    const c = await created(wp);
    const res = await update(wp, c.id, c);
    expect(res.status, res.text).toBe(200);
    expect(res.body.result).toEqual(c);
  });
});

describe('the connector list', () => {
  it('is in creation order and holds only this workplace', async () => {
    const a = await t.createWorkplace();
    const b = await t.createWorkplace();
    const ids = [];
    for (const name of ['one', 'two', 'three']) ids.push((await created(a, { ...MINIMAL, name })).id);
    await created(b, { ...MINIMAL, name: 'other' });
    const items = (await list(a)).body.items;
    expect(items.map((c: Json) => c.id)).toEqual(ids);
    expect(items.map((c: Json) => c.name)).toEqual(['one', 'two', 'three']);
    // An update does not move a connector.
    await update(a, ids[0] as string, { ...MINIMAL, name: 'one again' });
    expect((await list(a)).body.items.map((c: Json) => c.id)).toEqual(ids);
  });
});

describe('unknown things answer 404', () => {
  it.each([
    ['update', (wp: string) => update(wp, '00000000-0000-4000-8000-000000000000', MINIMAL)],
    ['delete', (wp: string) => remove(wp, '00000000-0000-4000-8000-000000000000')],
    ['update with an id of another shape', (wp: string) => update(wp, 'not-a-uuid', MINIMAL)],
    ['delete with an id of another shape', (wp: string) => remove(wp, 'not-a-uuid')],
  ])('%s of an unknown connector', async (_label, run) => {
    const wp = await t.createWorkplace();
    const res = await run(wp);
    expect(res.status, res.text).toBe(404);
    expect(res.body.code).toBe('CONNECTOR_NOT_FOUND');
  });

  it.each([
    ['list', () => list('nosuchworkplacehere')],
    ['create', () => create('nosuchworkplacehere', MINIMAL)],
    ['update', () => update('nosuchworkplacehere', '00000000-0000-4000-8000-000000000000', MINIMAL)],
    ['delete', () => remove('nosuchworkplacehere', '00000000-0000-4000-8000-000000000000')],
  ])('%s in an unknown workplace', async (_label, run) => {
    const res = await run();
    expect(res.status, res.text).toBe(404);
    expect(res.body.code).toBe('WORKPLACE_NOT_FOUND');
  });

  it("never touches another workplace's connector", async () => {
    const a = await t.createWorkplace();
    const b = await t.createWorkplace();
    const c = await created(a);
    expect((await update(b, c.id, MINIMAL)).status).toBe(404);
    expect((await remove(b, c.id)).status).toBe(404);
    expect((await list(a)).body.items).toEqual([c]);
  });

  it('a deleted connector is gone for update and delete', async () => {
    const wp = await t.createWorkplace();
    const c = await created(wp, MINIMAL);
    expect((await remove(wp, c.id)).status).toBe(204);
    expect((await remove(wp, c.id)).status).toBe(404);
    expect((await update(wp, c.id, MINIMAL)).status).toBe(404);
  });

  it('goes away with its workplace', async () => {
    const wp = await t.createWorkplace();
    const c = await created(wp);
    await t.request({ method: 'DELETE', url: `/v1/workplaces/${wp}` });
    const rows = await t.sql`select 1 from connectors where id = ${c.id}`;
    expect(rows.length).toBe(0);
  });
});

const method = (value: string, http_methods: string[] = ['GET']) => ({ title: value, value, http_methods });

/** A wide tree: 1 root, 100 objects, 5,000 strings = 5,101 nodes. */
const tooManyNodes = () =>
  withInput({
    type: 'object',
    properties: Object.fromEntries(
      Array.from({ length: 100 }, (_, i) => [
        `g${i}`,
        {
          type: 'object',
          properties: Object.fromEntries(Array.from({ length: 50 }, (_, j) => [`f${j}`, { type: 'string' }])),
        },
      ]),
    ),
  });

/** Over 1 MiB: presenters whose allowed values are long strings. */
const tooBig = () =>
  withInput({
    type: 'object',
    properties: Object.fromEntries(
      Array.from({ length: 4 }, (_, i) => [
        `f${i}`,
        { type: 'string', presenter: { values: Array.from({ length: 1000 }, () => 'v'.repeat(300)) } },
      ]),
    ),
  });

const INPUT_M = '/dataMapping/input/m';

const INVALID: [string, () => Json, string][] = [
  // rules beyond the JSON shape
  [
    'duplicate method values',
    () => ({ ...MINIMAL, methods: [method('a'), method('b'), method('a')] }),
    '/methods/2/value',
  ],
  [
    'an input mapping for an undeclared method',
    () => ({
      ...withInput({ type: 'string' }),
      dataMapping: { input: { nope: { type: 'string' } }, output: {} },
    }),
    '/dataMapping/input/nope',
  ],
  [
    'an output mapping for an undeclared method',
    () => ({
      ...withInput({ type: 'string' }),
      dataMapping: { input: {}, output: { nope: { type: 'string' } } },
    }),
    '/dataMapping/output/nope',
  ],
  [
    'a mapping key that needs escaping',
    () => ({ ...MINIMAL, dataMapping: { input: { 'a/b': { type: 'string' } }, output: {} } }),
    '/dataMapping/input/a~1b',
  ],
  ['an object node without properties', () => withInput({ type: 'object' }), `${INPUT_M}/properties`],
  [
    'a nested object node without properties',
    () => withInput({ type: 'object', properties: { a: { type: 'object' } } }),
    `${INPUT_M}/properties/a/properties`,
  ],
  [
    'properties on a string node',
    () => withInput({ type: 'string', properties: { a: { type: 'string' } } }),
    `${INPUT_M}/properties`,
  ],
  [
    'items on a string node',
    () => withInput({ type: 'string', items: { type: 'string' } }),
    `${INPUT_M}/items`,
  ],
  [
    'a presenter on an object node',
    () => withInput({ type: 'object', properties: {}, presenter: { title: 'x' } }),
    `${INPUT_M}/presenter`,
  ],
  [
    'an object inside array items without properties',
    () => withInput({ type: 'array', items: { type: 'object' } }),
    `${INPUT_M}/items/properties`,
  ],
  ['nesting 17 deep', () => withInput(nested(17)), `${INPUT_M}${'/properties/f'.repeat(16)}`],
  ['more than 5,000 nodes', tooManyNodes, '/dataMapping'],
  ['more than 1 MiB of JSON', tooBig, ''],
  ['an id on create', () => ({ ...MINIMAL, id: '00000000-0000-4000-8000-000000000000' }), '/id'],
  // the JSON shape
  [
    'an HTTP method that does not exist',
    () => ({ ...MINIMAL, methods: [method('a', ['FETCH'])] }),
    '/methods/0/http_methods/0',
  ],
  [
    'a lower-case HTTP method',
    () => ({ ...MINIMAL, methods: [method('a', ['post'])] }),
    '/methods/0/http_methods/0',
  ],
  ['no HTTP methods', () => ({ ...MINIMAL, methods: [method('a', [])] }), '/methods/0/http_methods'],
  [
    'a repeated HTTP method',
    () => ({ ...MINIMAL, methods: [method('a', ['GET', 'GET'])] }),
    '/methods/0/http_methods',
  ],
  ['a method value with a space', () => ({ ...MINIMAL, methods: [method('send mail')] }), '/methods/0/value'],
  ['an empty method value', () => ({ ...MINIMAL, methods: [method('')] }), '/methods/0/value'],
  [
    'a method without a value',
    () => ({ ...MINIMAL, methods: [{ title: 'M', http_methods: ['GET'] }] }),
    '/methods/0/value',
  ],
  [
    'a method with an unknown field',
    () => ({ ...MINIMAL, methods: [{ ...method('a'), path: '/x' }] }),
    '/methods/0/path',
  ],
  ['an unknown node type', () => withInput({ type: 'date' }), `${INPUT_M}/type`],
  ['a node without a type', () => withInput({ required: true }), `${INPUT_M}/type`],
  ['a non-boolean required', () => withInput({ type: 'string', required: 'yes' }), `${INPUT_M}/required`],
  ['an unknown node field', () => withInput({ type: 'string', format: 'email' }), `${INPUT_M}/format`],
  [
    'an unknown presenter field',
    () => withInput({ type: 'string', presenter: { color: 'red' } }),
    `${INPUT_M}/presenter/color`,
  ],
  [
    'a fractional presenter order',
    () => withInput({ type: 'string', presenter: { order: 1.5 } }),
    `${INPUT_M}/presenter/order`,
  ],
  [
    'a presenter tag that is not a string',
    () => withInput({ type: 'string', presenter: { tags: [1] } }),
    `${INPUT_M}/presenter/tags/0`,
  ],
  [
    'presenter visible that is not an object',
    () => withInput({ type: 'string', presenter: { visible: true } }),
    `${INPUT_M}/presenter/visible`,
  ],
  [
    'presenter values that are not an array',
    () => withInput({ type: 'string', presenter: { values: 'a,b' } }),
    `${INPUT_M}/presenter/values`,
  ],
  ['no name', () => ({ ...MINIMAL, name: undefined }), '/name'],
  ['an empty name', () => ({ ...MINIMAL, name: '' }), '/name'],
  ['no version', () => ({ ...MINIMAL, version: undefined }), '/version'],
  ['a numeric version', () => ({ ...MINIMAL, version: 2 }), '/version'],
  ['an empty owner', () => ({ ...MINIMAL, owner: '' }), '/owner'],
  ['a null image', () => ({ ...MINIMAL, image: null }), '/image'],
  ['no methods', () => ({ ...MINIMAL, methods: undefined }), '/methods'],
  ['no dataMapping', () => ({ ...MINIMAL, dataMapping: undefined }), '/dataMapping'],
  ['a dataMapping without output', () => ({ ...MINIMAL, dataMapping: { input: {} } }), '/dataMapping/output'],
  ['an unknown top-level field', () => ({ ...MINIMAL, color: 'red' }), '/color'],
];

describe('connectors that break a rule get 400 naming the field', () => {
  it.each(INVALID)('create with %s', async (_label, body, path) => {
    const wp = await t.createWorkplace();
    expectValidation(await create(wp, body()), path);
    expect((await list(wp)).body.items).toEqual([]);
  });

  it.each(INVALID.filter(([label]) => label !== 'an id on create'))(
    'update with %s, leaving the connector as it was',
    async (_label, body, path) => {
      const wp = await t.createWorkplace();
      const c = await created(wp);
      expectValidation(await update(wp, c.id, body()), path);
      expect((await list(wp)).body.items).toEqual([c]);
    },
  );

  it('update with an id that differs from the path', async () => {
    const wp = await t.createWorkplace();
    const c = await created(wp);
    expectValidation(await update(wp, c.id, { ...c, id: '00000000-0000-4000-8000-000000000000' }), '/id');
  });

  it('reports every broken rule at once', async () => {
    const wp = await t.createWorkplace();
    const res = await create(wp, {
      ...MINIMAL,
      methods: [method('a'), method('a')],
      dataMapping: { input: { b: { type: 'object' } }, output: {} },
    });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: Json) => e.path).sort()).toEqual(
      ['/dataMapping/input/b', '/dataMapping/input/b/properties', '/methods/1/value'].sort(),
    );
  });

  it('accepts 16 levels of nesting and refuses 10,000 with a 400, not a crash', async () => {
    const wp = await t.createWorkplace();
    await created(wp, withInput(nested(16)));
    // Built as text: JSON.stringify itself runs out of stack on 20,000 nested objects.
    const deep = `${'{"type":"object","properties":{"f":'.repeat(9_999)}{"type":"string"}${'}}'.repeat(9_999)}`;
    const res = await t.request({
      method: 'POST',
      url: url(wp),
      payload: JSON.stringify(withInput('DEEP')).replace('"DEEP"', deep),
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status, res.text.slice(0, 300)).toBe(400);
    expect((await list(wp)).body.items).toHaveLength(1);
  });
});
