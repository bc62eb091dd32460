import { errors, SQLSTATE } from '../../errors.js';
import { catalogLookups } from '../../metrics.js';
import { TextIndexRequired } from '../../mongo/filter/sql.js';
import type { Sql } from '../connection/sql.js';
import { type CollectionRef, findCollection, type Lookup } from './catalog.js';

const MAX_ENTRIES = 10_000;
/**
 * Each retry follows a catalog change committed during the attempt before; a request meets more than
 * one only while indexes are created and dropped back to back.
 */
const ATTEMPTS = 5;
/**
 * How long an entry is used before it is read again: the safety net for a change whose notification
 * was lost (db/storage/catalog-changes.ts), or that cannot arrive (LISTEN through a transaction pooler).
 */
export const CATALOG_ENTRY_TTL_MS = 10_000;

/** An entry's key: a workplace name holds no newline. */
function keyOf(workplace: string, name: string): string {
  return `${workplace}\n${name}`;
}

interface Entry {
  ref: CollectionRef;
  readAt: number;
}

/**
 * Catalog entries of collections, cached so that a request costs one round trip instead of two.
 * Every write, and every read whose SQL would be wrong with a stale entry, is guarded (guardedLimit
 * in db/storage/catalog.ts): if the collection's indexes changed anywhere, in this process or another,
 * the statement fails whole and runs again with a fresh entry. Other reads are right with any entry;
 * an index created by another process reaches them as soon as this process hears of the change
 * (db/storage/catalog-changes.ts), and at the latest when the entry expires.
 */
export class CatalogCache {
  readonly #entries = new Map<string, Entry>();

  constructor(
    private readonly sql: Sql,
    private readonly options: { ttlMs?: number; now?: () => number } = {},
  ) {}

  /**
   * Runs `read` with the collection's entry, cached when possible. `read` must guard the statements
   * that depend on the catalog, and must write nothing unless the statement or transaction that
   * fails also rolls its writes back: a stale entry is dropped and `read` runs again with a fresh one.
   */
  async withCollection<T>(
    workplace: string,
    name: string,
    read: (c: CollectionRef) => Promise<T>,
  ): Promise<Lookup<T>> {
    const key = keyOf(workplace, name);
    const now = this.options.now ?? Date.now;
    const ttl = this.options.ttlMs ?? CATALOG_ENTRY_TTL_MS;
    for (let attempt = 1; ; attempt++) {
      const entry = this.#entries.get(key);
      let c = entry && now() - entry.readAt < ttl ? entry.ref : undefined;
      const cached = c !== undefined;
      if (cached) catalogLookups.inc({ result: 'hit' });
      else catalogLookups.inc({ result: 'miss' });
      if (!c) {
        const readAt = now();
        const lookup = await findCollection(this.sql, workplace, name);
        if (!lookup.workplace || !lookup.found) {
          this.#entries.delete(key);
          return lookup.workplace ? { workplace: true, found: undefined } : lookup;
        }
        c = lookup.found;
        if (this.#entries.size >= MAX_ENTRIES) this.#entries.clear();
        this.#entries.set(key, { ref: c, readAt });
      }
      try {
        return { workplace: true, found: await read(c) };
      } catch (err) {
        this.#entries.delete(key);
        const code = (err as { code?: unknown }).code;
        // Stale: the indexes changed, or the table is gone (collection or workplace deleted).
        const stale =
          code === SQLSTATE.staleCatalog || code === '42P01' || code === '42703' || code === '3F000';
        // A text index created by another process is not in a cached entry: ask a fresh one.
        if (cached && err instanceof TextIndexRequired) continue;
        if (!stale) throw err;
        catalogLookups.inc({ result: 'stale' });
        if (attempt >= ATTEMPTS)
          throw errors.serviceUnavailable(
            `The indexes of collection '${name}' kept changing while the request ran; retry.`,
            err,
          );
      }
    }
  }

  /** Drops what this process knows of a workplace's collections (after it changed them). */
  forget(workplace: string): void {
    for (const key of this.#entries.keys())
      if (key.startsWith(keyOf(workplace, ''))) this.#entries.delete(key);
  }

  /** Drops one collection's entry: its catalog changed, here or in another process (catalog-changes.ts). */
  forgetCollection(workplace: string, name: string): void {
    this.#entries.delete(keyOf(workplace, name));
  }

  /** Drops every entry: changes may have been missed (catalog-changes.ts). */
  clear(): void {
    this.#entries.clear();
  }

  /** Whether the collection's entry is held, expired or not (for tests). */
  holds(workplace: string, name: string): boolean {
    return this.#entries.has(keyOf(workplace, name));
  }
}
