/** How postgres.js is asked to run a shared text (its `unsafe` options). */
export interface RunOptions {
  readonly prepare: boolean;
}
const UNPREPARED: RunOptions = Object.freeze({ prepare: false });
const PREPARED: RunOptions = Object.freeze({ prepare: true });

/** A text of the pool, and how it is run now. */
export interface SharedText {
  readonly text: string;
  options: RunOptions;
  /** The PreparedBudget epoch in which it was granted preparation; -1 while it is not. */
  epoch: number;
}

/**
 * How many distinct texts a connection pool may prepare per epoch.
 *
 * Why a bound: postgres.js caches every prepared statement of a connection for the connection's
 * life, without limit, and PostgreSQL keeps each one (with its plans) in that backend's memory.
 * Shared texts name their collection's table and catalog version, so a server with many
 * collections, or whose indexes change, would grow every backend without end. A text is prepared
 * only from its second use (a text used once gains nothing from it), and at most `cap` distinct
 * texts are granted preparation per epoch; beyond that texts run unprepared until the next epoch.
 * postgres.js recycles a PostgreSQL connection after 30 to 60 minutes (max_lifetime), so with
 * 30-minute epochs a connection lives through at most three: no backend holds more than three
 * times `cap` of these texts. The embedded database's single connection is never recycled, so it
 * prepares none (db/connection/embedded.ts). Per pool, because a pool's connections are the
 * backends that hold the texts; the server has one, and the pools of other processes (or of tests
 * in one process) neither spend nor raise each other's bound.
 *
 * The budget counts texts, not grants: the catalog cache replaces a collection's ref (and with it
 * its StatementTexts) every few seconds, and the new ref's texts are the same statements, which
 * postgres.js already holds prepared on its connections.
 */
export class PreparedBudget {
  #epoch = 0;
  #startedAt: number;
  readonly #granted = new Set<string>();

  constructor(
    readonly cap = 256,
    readonly epochMs = 30 * 60_000,
    private readonly now: () => number = Date.now,
  ) {
    this.#startedAt = now();
  }

  /** Whether `text` was granted preparation in the current epoch. */
  granted(text: string): boolean {
    this.#roll();
    return this.#granted.has(text);
  }

  /** Grants preparation to `text` unless the epoch's cap of distinct texts is used up. */
  grant(text: string): boolean {
    this.#roll();
    if (this.#granted.has(text)) return true;
    if (this.#granted.size >= this.cap) return false;
    this.#granted.add(text);
    return true;
  }

  get epoch(): number {
    this.#roll();
    return this.#epoch;
  }

  #roll(): void {
    const t = this.now();
    if (t - this.#startedAt < this.epochMs) return;
    this.#epoch++;
    this.#startedAt = t;
    this.#granted.clear();
  }
}

const POOL_BUDGETS = new WeakMap<object, PreparedBudget>();

/** The budget of the connection pool `pool` (the Sql the catalog reads through). */
export function preparedBudgetOf(pool: object): PreparedBudget {
  const known = POOL_BUDGETS.get(pool);
  if (known) return known;
  const budget = new PreparedBudget();
  POOL_BUDGETS.set(pool, budget);
  return budget;
}

/**
 * One string object per distinct statement text, handed to postgres.js instead of the text each
 * request compiles afresh.
 *
 * Why: postgres.js keeps a statement's text referenced from its per-query objects, which V8 often
 * allocates straight into the old generation (allocation-site pretenuring). A text built for one
 * request is then reachable from old objects, survives every young-generation collection until the
 * next full one and is promoted, with all the pieces of the rope it was concatenated from. Shared
 * texts are promoted once, not per request (docs/performance.md has the measurements); looking a
 * text up costs one hash of it.
 *
 * The pool also decides which texts are prepared (PreparedBudget): PostgreSQL then parses and plans
 * a statement once per connection instead of at every request, and postgres.js sends it in one
 * round trip instead of two. Never more texts than the connection pool's budget allows; DB_PREPARE=false turns preparation off for the whole connection pool (db/connection/open.ts).
 *
 * Each collection ref holds its own pool (db/storage/catalog.ts): texts name its table, and the catalog
 * cache hands one ref to every request until the entry expires. Bounded: past `max` distinct texts
 * the pool starts over rather than grow.
 */
export class StatementTexts {
  readonly #texts = new Map<string, SharedText>();

  constructor(
    readonly max: number,
    private readonly budget: PreparedBudget,
  ) {}

  /**
   * The pool's entry for `text`, prepared from its second use while the budget allows, and from its
   * first when another pool (an earlier ref of the same collection) already had it granted.
   */
  use(text: string): SharedText {
    const known = this.#texts.get(text);
    if (known !== undefined) {
      const epoch = this.budget.epoch;
      if (known.epoch !== epoch) {
        const granted = this.budget.grant(text);
        known.options = granted ? PREPARED : UNPREPARED;
        known.epoch = granted ? epoch : -1;
      }
      return known;
    }
    if (this.#texts.size >= this.max) this.#texts.clear();
    const granted = this.budget.granted(text);
    const entry: SharedText = {
      text,
      options: granted ? PREPARED : UNPREPARED,
      epoch: granted ? this.budget.epoch : -1,
    };
    this.#texts.set(text, entry);
    return entry;
  }

  get size(): number {
    return this.#texts.size;
  }
}
