import type { Sql } from '../connection/sql.js';
import type { CatalogCache } from './catalog-cache.js';

/** The channel migration 0024's triggers notify on. */
export const CATALOG_CHANNEL = 'wpa_catalog';

/** What a notification names (migration 0024 says when each is sent). */
export type CatalogChange =
  | { kind: 'collection'; workplace: string; collection: string }
  | { kind: 'oidc'; workplace: string }
  | { kind: 'workplace'; workplace: string }
  | { kind: 'grants'; workplace: string };

/**
 * A payload as migration 0024 builds it, or undefined for any other: a process of a later version
 * may announce a kind this one does not know, and a caller takes that as "anything may have changed".
 */
export function readCatalogChange(payload: string): CatalogChange | undefined {
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { kind, workplace, collection } = value as Record<string, unknown>;
  if (typeof workplace !== 'string') return undefined;
  if (kind === 'collection')
    return typeof collection === 'string' ? { kind, workplace, collection } : undefined;
  if (kind === 'oidc' || kind === 'workplace' || kind === 'grants') return { kind, workplace };
  return undefined;
}

export interface CatalogChangeListener {
  /**
   * Stops listening at once. The UNLISTEN is not waited for: with the database away it would wait
   * for a connection, and hold up a shutdown; the listening connection ends with the pool.
   */
  close(): Promise<void>;
}

/**
 * Keeps this process's caches in step with catalog changes committed by any process: the entry a
 * change makes stale is dropped as soon as the notification arrives. The caches' TTL stays as the
 * safety net, and correctness never depends on a notification (writes, and the reads a stale entry
 * could make wrong, are guarded: db/storage/plan.ts, catalogGuard).
 *
 * On PostgreSQL, postgres.js LISTENs on a connection of its own and LISTENs again after it was lost;
 * notifications sent meanwhile are lost, so each (re)connection drops every entry (its `onlisten`).
 * On PGlite the session itself listens (db/connection/embedded.ts). Through a pooler in transaction
 * mode, LISTEN does not hold: the TTL applies (docs/operating.md).
 *
 * `workplaceChanged` is told of a workplace deleted, or whose OIDC settings or keys changed. It has
 * no part in the drop after a reconnection: every request reads its workplace's OIDC state, and the
 * provider registry rebuilds a provider whose keys changed (oidc/provider.ts), so a provider kept
 * after a lost notification costs memory, not correctness.
 * `onError` gets what a subscriber threw, and a LISTEN that failed at start (postgres.js retries
 * it when its connection is replaced; until then the TTL applies).
 */
export async function listenForCatalogChanges(
  sql: Sql,
  subscribers: {
    catalog: CatalogCache;
    workplaceChanged?: (workplace: string) => void;
    /** A grant of the workplace ended, or one of its clients was deleted (migration 0025). */
    grantsEnded?: (workplace: string) => void;
    /** Notifications may have been lost (a reconnection): whatever they would have said is unknown. */
    missed?: () => void;
  },
  onError: (err: unknown) => void = () => {},
): Promise<CatalogChangeListener> {
  const { catalog, workplaceChanged, grantsEnded, missed: alsoMissed } = subscribers;
  // postgres.js's unlisten misses a listener added back after a reconnect: closing must silence it.
  let closed = false;
  const apply = (payload: string) => {
    if (closed) return;
    try {
      const change = readCatalogChange(payload);
      if (!change) {
        catalog.clear();
        alsoMissed?.();
      } else if (change.kind === 'grants') grantsEnded?.(change.workplace);
      else if (change.kind === 'collection') catalog.forgetCollection(change.workplace, change.collection);
      else {
        if (change.kind === 'workplace') catalog.forget(change.workplace);
        workplaceChanged?.(change.workplace);
      }
    } catch (err) {
      onError(err);
    }
  };
  const missed = () => {
    if (closed) return;
    catalog.clear();
    alsoMissed?.();
  };
  let unlisten: (() => Promise<void>) | undefined;
  try {
    ({ unlisten } = await sql.listen(CATALOG_CHANNEL, apply, missed));
  } catch (err) {
    onError(err);
  }
  return {
    async close() {
      closed = true;
      void unlisten?.().catch(() => {});
    },
  };
}
