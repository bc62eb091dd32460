import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

/**
 * `POST …/rules/test` (issue 45, "rules you can test and debug"): a table of cases through the
 * production path, with the refusing clause named, and nothing written.
 */

let t: TestApp;
let url: string;
const OWN = { $expr: { $eq: ['$owner', '$$AUTH.sub'] } };
const DOCS = [
  { _id: 'n1', owner: 'u1', kind: 'note', ref: 1 },
  { _id: 'n2', owner: 'u2', kind: 'note', ref: 2 },
];

beforeAll(async () => {
  t = await startTestApp();
  const workplace = await t.createWorkplace();
  url = `/v1/workplaces/${workplace}/storages/notes`;
  expect(
    (
      await t.request({
        method: 'POST',
        url: `/v1/workplaces/${workplace}/storages`,
        body: { name: 'notes' },
      })
    ).status,
  ).toBe(201);
  expect((await t.request({ method: 'POST', url: `${url}/create`, body: { docs: DOCS } })).status).toBe(201);
  const rules = {
    read: OWN,
    create: { kind: 'note', ...OWN },
    update: OWN,
    delete: OWN,
    fields: { immutable: ['ref'] },
  };
  expect((await t.request({ method: 'PUT', url: `${url}/rules`, body: rules })).status).toBe(200);
});
afterAll(async () => {
  await t?.close();
});

const test = (body: unknown) => t.request({ method: 'POST', url: `${url}/rules/test`, body });
const u1 = { sub: 'u1' };

it('runs each case through the stored rules, names the refusing clause, and writes nothing', async () => {
  const res = await test({
    cases: [
      { name: 'reads own', auth: u1, operation: 'read', expect: { ids: ['n1'] } },
      { name: 'reads by id', auth: u1, operation: 'read', query: { _id: 'n2' }, expect: { ids: [] } },
      {
        name: 'creates own',
        auth: u1,
        operation: 'create',
        doc: { owner: 'u1', kind: 'note' },
        expect: 'allow',
      },
      {
        name: 'foreign owner',
        auth: u1,
        operation: 'create',
        doc: { owner: 'u2', kind: 'note' },
        expect: 'deny',
      },
      { name: 'wrong kind', auth: u1, operation: 'create', doc: { owner: 'u1', kind: 'x' }, expect: 'deny' },
      { name: 'gives away', auth: u1, operation: 'update', doc: { $set: { owner: 'u2' } }, expect: 'deny' },
      { name: 'immutable', auth: u1, operation: 'update', doc: { $inc: { ref: 1 } }, expect: 'deny' },
      { name: 'edits own', auth: u1, operation: 'update', doc: { $set: { t: 1 } }, expect: { ids: ['n1'] } },
      { name: 'deletes own', auth: u1, operation: 'delete', query: {}, expect: { ids: ['n1'] } },
      { name: 'a wrong expectation', auth: { sub: 'u2' }, operation: 'read', expect: { ids: ['n1'] } },
    ],
  });
  expect(res.status, res.text).toBe(200);
  const { cases, passed, failed } = res.body.result;
  expect([passed, failed]).toEqual([9, 1]);
  expect(cases[3]).toEqual({
    name: 'foreign owner',
    allowed: false,
    refused_by: 'create',
    clause: OWN,
    passed: true,
  });
  expect(cases[4]).toEqual({
    name: 'wrong kind',
    allowed: false,
    refused_by: 'create',
    clause: { kind: 'note' },
    passed: true,
  });
  expect(cases[5]).toMatchObject({ allowed: false, refused_by: 'update', clause: OWN, ids: ['n1'] });
  expect(cases[6]).toMatchObject({ allowed: false, refused_by: 'immutable', field: 'ref', ids: ['n1'] });
  expect(cases[9]).toMatchObject({ name: 'a wrong expectation', allowed: true, ids: ['n2'], passed: false });
  // The statement shown is the one an end user's read runs: the rule's owner comparison is in it.
  expect(cases[0].statement).toMatch(/^select doc.* from .*where .*order by/);
  expect(cases[0].statement).toContain('doc ->');
  const all = await t.request({ method: 'POST', url: `${url}/read`, body: {} });
  expect(all.body.result).toEqual(DOCS);
});

it('tests rules given in the request, before they are stored; a kind without a rule refuses', async () => {
  const res = await test({
    rules: { read: {} },
    cases: [
      { auth: u1, operation: 'read', expect: { ids: ['n1', 'n2'] } },
      { auth: u1, operation: 'create', doc: { owner: 'u1', kind: 'note' } },
    ],
  });
  expect(res.status, res.text).toBe(200);
  expect(res.body.result.cases).toMatchObject([
    { allowed: true, ids: ['n1', 'n2'], passed: true },
    { allowed: false, refused_by: 'create' },
  ]);
  const stored = await t.request({ method: 'GET', url: `${url}/rules` });
  expect(stored.body.result.read).toEqual(OWN);
});

it('answers 400 naming the case whose query the grammar refuses', async () => {
  const res = await test({
    cases: [
      { auth: u1, operation: 'read' },
      { auth: u1, operation: 'read', query: { $bad: 1 } },
    ],
  });
  expect(res.status).toBe(400);
  expect(res.body.detail).toMatch(/^cases\[1\]/);
});
