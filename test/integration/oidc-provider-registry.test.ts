// A process keeps a bounded number of workplaces' providers, and none of a deleted workplace.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../app.js';
import { migrate } from '../../db/connection/migrate.js';
import type { Sql } from '../../db/connection/sql.js';
import { ProviderRegistry } from '../../oidc/provider.js';
import { generateSecret, hashSecret, TOKEN_PREFIX } from '../../secrets.js';
import { openTestDatabase, randomName } from '../helpers/app.js';

const MAX = 3;
let db: { sql: Sql; close(): Promise<void> };
let registry: ProviderRegistry;
let app: FastifyInstance;
/** Another process on the same database. */
let other: FastifyInstance;
const adminToken = generateSecret(TOKEN_PREFIX.admin);

beforeAll(async () => {
  db = await openTestDatabase();
  await migrate(db.sql);
  registry = new ProviderRegistry(db.sql, () => 'http://127.0.0.1:3000', undefined, MAX);
  app = await buildApp({ sql: db.sql, adminTokenHash: hashSecret(adminToken), providers: registry });
  other = await buildApp({ sql: db.sql, adminTokenHash: hashSecret(adminToken) });
});
afterAll(async () => {
  await app?.close();
  await other?.close();
  await db?.close();
});

async function newWorkplace(): Promise<string> {
  const name = randomName('reg');
  const res = await app.inject({
    method: 'POST',
    url: '/v1/workplaces',
    headers: { 'x-auth-token': adminToken },
    payload: { name },
  });
  expect(res.statusCode).toBe(201);
  return name;
}

async function discovery(workplace: string): Promise<number> {
  return (await app.inject({ method: 'GET', url: `/oidc/${workplace}/.well-known/openid-configuration` }))
    .statusCode;
}

describe('the providers a process keeps', () => {
  it('are at most the configured number, the least recently used going first', async () => {
    const names = [await newWorkplace(), await newWorkplace(), await newWorkplace(), await newWorkplace()];
    const [a, b, c, d] = names as [string, string, string, string];
    for (const name of [a, b, c]) expect(await discovery(name)).toBe(200);
    const providerOfA = (await registry.get(a))?.provider;
    expect((await registry.get(a))?.provider).toBe(providerOfA); // kept between requests
    expect(registry.size).toBe(MAX);

    // a was used last, so d pushes b out; c and a stay.
    expect(await discovery(d)).toBe(200);
    expect(registry.size).toBe(MAX);
    expect((await registry.get(a))?.provider).toBe(providerOfA);
    const providerOfC = (await registry.get(c))?.provider;
    // b comes back as a new instance and pushes out d (least recent now), not a or c.
    expect(await discovery(b)).toBe(200);
    expect(registry.size).toBe(MAX);
    expect((await registry.get(a))?.provider).toBe(providerOfA);
    expect((await registry.get(c))?.provider).toBe(providerOfC);
  });

  it('lose a workplace deleted through this process at once', async () => {
    const name = await newWorkplace();
    expect(await discovery(name)).toBe(200);
    const before = registry.size;
    const res = await app.inject({
      method: 'DELETE',
      url: `/v1/workplaces/${name}`,
      headers: { 'x-auth-token': adminToken },
    });
    expect(res.statusCode).toBe(204);
    expect(registry.size).toBe(before - 1);
    expect(await discovery(name)).toBe(404);
  });

  it('lose a workplace another process deleted as soon as they hear of it', async () => {
    const name = await newWorkplace();
    expect(await discovery(name)).toBe(200);
    const before = registry.size;
    const res = await other.inject({
      method: 'DELETE',
      url: `/v1/workplaces/${name}`,
      headers: { 'x-auth-token': adminToken },
    });
    expect(res.statusCode).toBe(204);
    await expect.poll(() => registry.size, { timeout: 2000, interval: 10 }).toBe(before - 1);
    expect(await discovery(name)).toBe(404);
  });

  it('lose a workplace another process deleted on their next request, deaf to catalog changes', async () => {
    const deafRegistry = new ProviderRegistry(db.sql, () => 'http://127.0.0.1:3000', undefined, MAX);
    const deaf = await buildApp({
      sql: db.sql,
      adminTokenHash: hashSecret(adminToken),
      providers: deafRegistry,
      catalogChanges: false,
    });
    try {
      const name = await newWorkplace();
      const discover = async () =>
        (await deaf.inject({ method: 'GET', url: `/oidc/${name}/.well-known/openid-configuration` }))
          .statusCode;
      expect(await discover()).toBe(200);
      const res = await other.inject({
        method: 'DELETE',
        url: `/v1/workplaces/${name}`,
        headers: { 'x-auth-token': adminToken },
      });
      expect(res.statusCode).toBe(204);
      expect(deafRegistry.size).toBe(1);
      expect(await discover()).toBe(404);
      expect(deafRegistry.size).toBe(0);
    } finally {
      await deaf.close();
    }
  });
});
