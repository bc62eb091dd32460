import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomName } from '../helpers/app.js';
import { addUser, asEndUser, type EndUser, signInEndUser } from '../helpers/end-users.js';
import { type LiveServer, startLiveServer, type Tenant, tenantKit } from '../helpers/oidc-flow.js';

/**
 * End users of a workplace reach its collections with their access tokens, under the collections'
 * rules (issue 45): what a rule hides is indistinguishable from what does not exist, on every
 * route; writes a rule refuses write nothing.
 */

let server: LiveServer;
let kit: ReturnType<typeof tenantKit>;
let t: Tenant;
let u1: EndUser;
let u2: EndUser;

const OWN = { $expr: { $eq: ['$owner', '$$AUTH.sub'] } };
const PER_USER = 50;

beforeAll(async () => {
  server = await startLiveServer();
  kit = tenantKit(server);
  t = await kit.newTenant();
  await addUser(kit, t, 'u1', { role: 'reader', groups: ['staff'] });
  await addUser(kit, t, 'u2', { role: 'reader', groups: ['guests'] });
  u1 = await signInEndUser(t, 'u1@acme.example', { scope: 'openid roles' });
  u2 = await signInEndUser(t, 'u2@acme.example', { scope: 'openid roles' });
});
afterAll(async () => {
  await server?.close();
});

const base = () => `/v1/workplaces/${t.workplace}/storages`;

async function newCollection(rules?: unknown): Promise<string> {
  const name = randomName('c');
  expect((await kit.api('POST', base(), { name })).status).toBe(201);
  if (rules !== undefined) {
    const put = await kit.api('PUT', `${base()}/${name}/rules`, rules);
    expect(put.status, put.text).toBe(200);
  }
  return name;
}

const as = (u: EndUser | undefined, route: string, body: unknown, collection: string) =>
  asEndUser(server, u?.accessToken, 'POST', `${base()}/${collection}/${route}`, body);

const admin = (route: string, body: unknown, collection: string) =>
  kit.api('POST', `${base()}/${collection}/${route}`, body);

/** A problem body without what differs between any two responses (its request id). */
function comparable(res: { status: number; body: unknown }) {
  const { request_id: _, ...rest } = (res.body ?? {}) as Record<string, unknown>;
  return { status: res.status, body: rest };
}

describe('the isolation matrix: u1 never reads, counts, groups, joins or changes a u2 document', () => {
  let notes: string;
  let labels: string;
  let u2Ids: string[];

  beforeAll(async () => {
    const all = { read: OWN, create: OWN, update: OWN, delete: OWN };
    notes = await newCollection(all);
    labels = await newCollection(all);
    for (const u of [u1, u2]) {
      const docs = Array.from({ length: PER_USER }, (_, n) => ({
        owner: u.sub,
        n,
        kind: n % 3,
        tag: `t${n % 5}`,
      }));
      const created = await as(u, 'create', { docs }, notes);
      expect(created.status, created.text).toBe(201);
      const tagDocs = Array.from({ length: 5 }, (_, n) => ({ owner: u.sub, tag: `t${n}` }));
      expect((await as(u, 'create', { docs: tagDocs }, labels)).status).toBe(201);
    }
    const u2Docs = await admin('read', { query: { owner: 'u2' }, limit: 1000 }, notes);
    u2Ids = u2Docs.body.result.map((d: { _id: string }) => d._id);
    expect(u2Ids).toHaveLength(PER_USER);
  });

  const queries = () => [
    {},
    { _id: { $in: u2Ids } },
    { owner: 'u2' },
    { $or: [{ owner: 'u2' }, { n: { $gte: 0 } }] },
  ];

  it('reads, counts and distinct values see u1 documents only, whatever the filter', async () => {
    for (const query of queries()) {
      const read = await as(u1, 'read', { query, limit: 1000 }, notes);
      expect(read.status, read.text).toBe(200);
      expect(read.body.result.every((d: { owner: string }) => d.owner === 'u1')).toBe(true);
      const count = await as(u1, 'count', { query }, notes);
      expect(count.body.result.count).toBe(read.body.result.length);
      const owners = await as(u1, 'distinct', { key: 'owner', query }, notes);
      expect(owners.body.result).toEqual(read.body.result.length ? ['u1'] : []);
    }
    expect((await as(u1, 'count', { query: {} }, notes)).body.result.count).toBe(PER_USER);
    expect((await as(u1, 'count', { query: { _id: { $in: u2Ids } } }, notes)).body.result.count).toBe(0);
  });

  it('aggregations group, count, facet and join u1 documents only', async () => {
    for (const query of queries()) {
      const pipeline = [
        { $match: query },
        {
          $facet: {
            byOwner: [{ $group: { _id: '$owner', n: { $sum: 1 } } }],
            total: [{ $count: 'n' }],
            joined: [
              { $lookup: { from: labels, localField: 'tag', foreignField: 'tag', as: 'labels' } },
              { $unwind: '$labels' },
              { $group: { _id: '$labels.owner', n: { $sum: 1 } } },
            ],
          },
        },
      ];
      const res = await as(u1, 'aggregate', { pipeline }, notes);
      expect(res.status, res.text).toBe(200);
      const [facets] = res.body.result;
      for (const g of [...facets.byOwner, ...facets.joined]) expect(g._id).toBe('u1');
      const expected = (await as(u1, 'count', { query }, notes)).body.result.count;
      expect(facets.total).toEqual(expected ? [{ n: expected }] : []);
    }
    const plain = await as(
      u1,
      'aggregate',
      { pipeline: [{ $group: { _id: '$owner', n: { $sum: 1 } } }] },
      notes,
    );
    expect(plain.body.result).toEqual([{ _id: 'u1', n: PER_USER }]);
  });

  it('a u2 _id answers every single-document route exactly as a missing one', async () => {
    const missing = 'ffffffffffffffffffffffff';
    const routes: [string, (id: string) => unknown][] = [
      ['update-one', (id) => ({ query: { _id: id }, doc: { $set: { x: 1 } } })],
      ['replace-one', (id) => ({ query: { _id: id }, doc: { owner: 'u1', x: 1 } })],
      ['delete-one', (id) => ({ query: { _id: id } })],
      ['find-one-and-update', (id) => ({ query: { _id: id }, doc: { $set: { x: 1 } } })],
      ['find-one-and-replace', (id) => ({ query: { _id: id }, doc: { owner: 'u1', x: 1 } })],
      ['find-one-and-delete', (id) => ({ query: { _id: id } })],
      ['read', (id) => ({ query: { _id: id } })],
      ['count', (id) => ({ query: { _id: id } })],
    ];
    for (const [route, body] of routes) {
      const hidden = await as(u1, route, body(u2Ids[0] as string), notes);
      const absent = await as(u1, route, body(missing), notes);
      expect(comparable(hidden), route).toEqual(comparable(absent));
    }
  });

  it('updateMany and deleteMany change u1 documents only', async () => {
    const before = await admin('read', { query: { owner: 'u2' }, limit: 1000 }, notes);
    const updated = await as(u1, 'update', { query: {}, doc: { $inc: { seen: 1 } } }, notes);
    expect(updated.body.result).toMatchObject({ matchedCount: PER_USER, modifiedCount: PER_USER });
    const byId = await as(
      u1,
      'update',
      { query: { _id: { $in: u2Ids } }, doc: { $inc: { seen: 1 } } },
      notes,
    );
    expect(byId.body.result).toMatchObject({ matchedCount: 0, modifiedCount: 0 });
    const deleted = await as(u1, 'delete', { query: { _id: { $in: u2Ids } } }, notes);
    expect(deleted.body.result.deletedCount).toBe(0);
    const after = await admin('read', { query: { owner: 'u2' }, limit: 1000 }, notes);
    expect(after.body.result).toEqual(before.body.result);
    expect((await admin('count', { query: {} }, notes)).body.result.count).toBe(2 * PER_USER);
  });
});

describe('rules', () => {
  it('a collection without rules refuses end users and still serves administrators', async () => {
    const c = await newCollection();
    for (const [route, body] of [
      ['read', {}],
      ['count', { query: {} }],
      ['create', { docs: [{ a: 1 }] }],
      ['delete', { query: {} }],
      ['aggregate', { pipeline: [] }],
    ] as const) {
      const res = await as(u1, route, body, c);
      expect(res.status, route).toBe(403);
      expect(res.body.code).toBe('FORBIDDEN');
    }
    expect((await admin('create', { docs: [{ a: 1 }] }, c)).status).toBe(201);
    expect((await admin('count', { query: {} }, c)).body.result.count).toBe(1);
    const rules = await kit.api('GET', `${base()}/${c}/rules`);
    expect(rules.body.result).toEqual({
      read: null,
      create: null,
      update: null,
      delete: null,
      fields: { hidden: [], immutable: [], presets: {} },
    });
  });

  it('a kind left null refuses that access; {} admits every signed-in user', async () => {
    const c = await newCollection({ read: {} });
    await admin('create', { docs: [{ a: 1 }, { a: 2 }] }, c);
    expect((await as(u1, 'count', { query: {} }, c)).body.result.count).toBe(2);
    expect((await as(u2, 'count', { query: {} }, c)).body.result.count).toBe(2);
    const refused = await as(u1, 'create', { docs: [{ a: 3 }] }, c);
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toMatch(/create/);
    expect((await as(undefined, 'count', { query: {} }, c)).status).toBe(401);
  });

  it('a claim rule: $in on $$AUTH.groups; a claim the caller lacks makes the rule false, never an error', async () => {
    const c = await newCollection({
      read: { $expr: { $in: ['$group', '$$AUTH.groups'] } },
    });
    await admin('create', { docs: [{ group: 'staff' }, { group: 'guests' }, { group: 'staff' }] }, c);
    expect((await as(u1, 'count', { query: {} }, c)).body.result.count).toBe(2);
    expect((await as(u2, 'count', { query: {} }, c)).body.result.count).toBe(1);
    const missing = await newCollection({ read: { $expr: { $in: ['$group', '$$AUTH.teams'] } } });
    await admin('create', { docs: [{ group: 'staff' }] }, missing);
    const res = await as(u1, 'read', {}, missing);
    expect(res.status, res.text).toBe(200);
    expect(res.body.result).toEqual([]);
  });

  it('a $$USER rule follows the profile from the next request on', async () => {
    const c = await newCollection({ read: { $expr: { $eq: ['$$USER.role', 'editor'] } } });
    await admin('create', { docs: [{ a: 1 }] }, c);
    expect((await as(u1, 'count', { query: {} }, c)).body.result.count).toBe(0);
    const promote = await kit.api('POST', `/v1/workplaces/${t.workplace}/storages/users/update`, {
      query: { _id: 'u1' },
      doc: { $set: { role: 'editor' } },
    });
    expect(promote.body.result.modifiedCount).toBe(1);
    expect((await as(u1, 'count', { query: {} }, c)).body.result.count).toBe(1);
    expect((await as(u2, 'count', { query: {} }, c)).body.result.count).toBe(0);
    await kit.api('POST', `/v1/workplaces/${t.workplace}/storages/users/update`, {
      query: { _id: 'u1' },
      doc: { $set: { role: 'reader' } },
    });
    expect((await as(u1, 'count', { query: {} }, c)).body.result.count).toBe(0);
  });

  it('$lookup applies the other collection’s rule with $$USER, though this one names no $$USER', async () => {
    const plain = await newCollection({ read: {} });
    const byRole = await newCollection({ read: { $expr: { $eq: ['$$USER.role', 'reader'] } } });
    await admin('create', { docs: [{ _id: 1, k: 'a' }] }, plain);
    await admin('create', { docs: [{ _id: 2, k: 'a' }] }, byRole);
    const pipeline = [{ $lookup: { from: byRole, localField: 'k', foreignField: 'k', as: 'joined' } }];
    const res = await as(u1, 'aggregate', { pipeline }, plain);
    expect(res.status, res.text).toBe(200);
    expect(res.body.result).toEqual([{ _id: 1, k: 'a', joined: [{ _id: 2, k: 'a' }] }]);
  });

  it('replacing the rules applies to the next request', async () => {
    const c = await newCollection({ read: { kind: 'public' } });
    await admin('create', { docs: [{ kind: 'public' }, { kind: 'private' }] }, c);
    expect((await as(u1, 'count', { query: {} }, c)).body.result.count).toBe(1);
    await kit.api('PUT', `${base()}/${c}/rules`, { read: {} });
    expect((await as(u1, 'count', { query: {} }, c)).body.result.count).toBe(2);
  });

  it.each([
    [{ read: { $where: 'true' } }, /read rule/],
    [{ read: { $expr: { $eq: ['$a', '$$SESSION.x'] } } }, /SESSION/],
    [{ read: { $text: { $search: 'x' } } }, /read rule/],
    [{ fields: { presets: { owner: '$owner' } } }, /variable/],
    [{ fields: { hidden: ['_id'] } }, /_id/],
    [{ fields: { presets: { _id: 'x' } } }, /_id/],
    [{ write: {} }, /write|additional/],
  ])('refuses a rules document that cannot be compiled: %j', async (rules, message) => {
    const c = await newCollection();
    const res = await kit.api('PUT', `${base()}/${c}/rules`, rules);
    expect(res.status, res.text).toBe(400);
    expect(res.text).toMatch(message);
  });
});

describe('writes', () => {
  const readAll = async (c: string) => (await admin('read', { query: {}, limit: 1000 }, c)).body.result;

  it('without a preset: a foreign owner, an update of owner, an upsert inserting a foreign owner are 403 and write nothing', async () => {
    const c = await newCollection({ read: OWN, create: OWN, update: OWN, delete: OWN });
    expect((await as(u1, 'create', { docs: [{ _id: 'a', owner: 'u1', n: 1 }] }, c)).status).toBe(201);
    const before = await readAll(c);
    const refused: [string, unknown][] = [
      [
        'create',
        {
          docs: [
            { _id: 'b', owner: 'u1' },
            { _id: 'c', owner: 'u2' },
          ],
        },
      ],
      ['update', { query: {}, doc: { $set: { owner: 'u2' } } }],
      ['update-one', { query: { _id: 'a' }, doc: { $set: { owner: 'u2' } } }],
      ['replace-one', { query: { _id: 'a' }, doc: { owner: 'u2' } }],
      ['find-one-and-update', { query: { _id: 'a' }, doc: { $set: { owner: 'u2' } } }],
      ['update', { query: { _id: 'new' }, doc: { $set: { owner: 'u2' } }, upsert: true }],
      ['update-one', { query: { _id: 'new', owner: 'u2' }, doc: { $set: { n: 2 } }, upsert: true }],
    ];
    for (const [route, body] of refused) {
      const res = await as(u1, route, body, c);
      expect(res.status, `${route} ${res.text}`).toBe(403);
      expect(res.body.code).toBe('FORBIDDEN');
      expect(res.body.detail).toMatch(/(create|update) rule/);
    }
    expect(await readAll(c)).toEqual(before);
  });

  it('an update whose result breaks the rule is 403 (the rule holds before and after)', async () => {
    const c = await newCollection({ read: {}, create: {}, update: { state: 'draft' } });
    await as(u1, 'create', { docs: [{ _id: 'd', state: 'draft' }] }, c);
    const res = await as(u1, 'update-one', { query: { _id: 'd' }, doc: { $set: { state: 'published' } } }, c);
    expect(res.status).toBe(403);
    expect(await readAll(c)).toEqual([{ _id: 'd', state: 'draft' }]);
    const ok = await as(u1, 'update-one', { query: { _id: 'd' }, doc: { $set: { title: 'x' } } }, c);
    expect(ok.body.result.modifiedCount).toBe(1);
  });

  it('with an owner preset, the owner the client sends is overwritten', async () => {
    const c = await newCollection({
      read: OWN,
      create: OWN,
      update: OWN,
      fields: { presets: { owner: '$$AUTH.sub', source: 'app' } },
    });
    expect((await as(u1, 'create', { docs: [{ _id: 'p', owner: 'u2' }] }, c)).status).toBe(201);
    expect((await as(u1, 'replace-one', { query: { _id: 'p' }, doc: { owner: 'u2', v: 2 } }, c)).status).toBe(
      200,
    );
    const upsert = await as(
      u1,
      'update-one',
      { query: { _id: 'q' }, doc: { $set: { v: 1 } }, upsert: true },
      c,
    );
    expect(upsert.status, upsert.text).toBe(200);
    expect(await readAll(c)).toEqual([
      { _id: 'p', owner: 'u1', v: 2, source: 'app' },
      { _id: 'q', owner: 'u1', v: 1, source: 'app' },
    ]);
  });

  it('an immutable field cannot be changed by end users, and can by administrators', async () => {
    const c = await newCollection({
      read: {},
      create: {},
      update: {},
      fields: { immutable: ['ref', 'meta.created'] },
    });
    await as(u1, 'create', { docs: [{ _id: 'i', ref: 7, meta: { created: 'x', note: 'a' } }] }, c);
    for (const doc of [{ $set: { ref: 8 } }, { $unset: { 'meta.created': '' } }, { $set: { meta: {} } }]) {
      const res = await as(u1, 'update-one', { query: { _id: 'i' }, doc }, c);
      expect(res.status, JSON.stringify(doc)).toBe(403);
      expect(res.body.detail).toMatch(/immutable/);
    }
    expect(
      (await as(u1, 'update-one', { query: { _id: 'i' }, doc: { $set: { 'meta.note': 'b' } } }, c)).status,
    ).toBe(200);
    expect((await admin('update-one', { query: { _id: 'i' }, doc: { $set: { ref: 9 } } }, c)).status).toBe(
      200,
    );
    expect(await readAll(c)).toEqual([{ _id: 'i', ref: 9, meta: { created: 'x', note: 'b' } }]);
  });
});

describe('hidden fields', () => {
  let c: string;
  beforeAll(async () => {
    c = await newCollection({
      read: {},
      create: {},
      update: {},
      delete: {},
      fields: { hidden: ['secret', 'profile.ssn'] },
    });
    await admin('create', { docs: [{ _id: 1, secret: 's1', profile: { ssn: 'x', name: 'A' }, n: 1 }] }, c);
  });

  it('are never returned to end users, and are to administrators', async () => {
    const expected = { _id: 1, profile: { name: 'A' }, n: 1 };
    expect((await as(u1, 'read', {}, c)).body.result).toEqual([expected]);
    expect((await as(u1, 'read', { fields: { n: 0 } }, c)).body.result).toEqual([
      { _id: 1, profile: { name: 'A' } },
    ]);
    expect((await as(u1, 'aggregate', { pipeline: [{ $match: { n: 1 } }] }, c)).body.result).toEqual([
      expected,
    ]);
    const found = await as(
      u1,
      'find-one-and-update',
      { query: { _id: 1 }, doc: { $inc: { n: 1 } }, returnDocument: 'after' },
      c,
    );
    expect(found.body.result.value).toEqual({ ...expected, n: 2 });
    expect((await admin('read', {}, c)).body.result[0].secret).toBe('s1');
  });

  it.each([
    ['read', { query: { secret: 's1' } }],
    ['read', { query: { 'profile.ssn': { $exists: true } } }],
    ['read', { query: { profile: { ssn: 'x', name: 'A' } } }],
    ['read', { query: { $expr: { $eq: ['$secret', 's1'] } } }],
    ['read', { query: { $expr: { $eq: [{ $type: '$$ROOT' }, 'object'] } } }],
    ['read', { query: { $jsonSchema: { required: ['secret'] } } }],
    ['read', { sort: { secret: 1 } }],
    ['read', { fields: { secret: 1 } }],
    ['count', { query: { secret: { $regex: '^s' } } }],
    ['distinct', { key: 'secret' }],
    ['distinct', { key: 'profile' }],
    ['aggregate', { pipeline: [{ $group: { _id: '$secret' } }] }],
    ['aggregate', { pipeline: [{ $sort: { 'profile.ssn': 1 } }] }],
    ['aggregate', { pipeline: [{ $project: { x: '$$ROOT' } }] }],
    ['update', { query: {}, doc: { $rename: { secret: 'visible' } } }],
    ['delete', { query: { secret: 's1' } }],
  ])('are refused (400) wherever a request names them: %s %j', async (route, body) => {
    const res = await as(u1, route, body, c);
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('INVALID_QUERY');
  });

  it('survive a replacement by an end user', async () => {
    const res = await as(u1, 'replace-one', { query: { _id: 1 }, doc: { n: 5, profile: { name: 'B' } } }, c);
    expect(res.status, res.text).toBe(200);
    expect((await admin('read', {}, c)).body.result).toEqual([
      { _id: 1, n: 5, profile: { name: 'B', ssn: 'x' }, secret: 's1' },
    ]);
  });
});
