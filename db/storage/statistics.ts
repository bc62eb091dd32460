import { type Sql, withoutStatementTimeout } from '../connection/sql.js';
import { citusInstalled } from './citus-shapes.js';

/** Rows written to a table since it was last analysed, before it is analysed again. */
const MIN_CHANGES = 1000;
const CHANGED_FRACTION = 0.1;

interface TableState {
  changed: number;
  rowsAtLastAnalyze: number;
  /** A Citus-distributed table: its rows are on a worker, whose autovacuum keeps it. */
  distributed?: boolean;
  /** The maintenance command in progress, if any. */
  running?: Promise<void>;
}

/**
 * Keeps collection tables vacuumed and their planner statistics fresh. PGlite has no autovacuum
 * (nor has a PostgreSQL with it turned off, as on the development machines), so without this a
 * table loaded by the API would never be analysed, and even PostgreSQL's autovacuum leaves a window
 * after a bulk load in which the planner knows nothing of the new rows or of the key columns an
 * index just added, and picks a scan in _id order over the index. VACUUM also marks pages
 * all-visible, which is what lets a count whose key condition is exact be answered from the index
 * alone (an Index Only Scan) instead of visiting every matching row, and it reclaims the space of
 * updated and deleted documents. The rule is autovacuum's: once the rows written exceed a base
 * plus a fraction of the table.
 *
 * On Citus the coordinator holds no rows of a distributed table (a workplace schema under
 * schema-based sharding), and its pg_class.reltuples stays 0, so the rule above would VACUUM such a
 * table after every MIN_CHANGES rows whatever its size. Those tables are left to the autovacuum of
 * the worker that holds them (on by default there); ANALYZE after an index build still runs, and
 * Citus passes it on to the shard. Whether Citus is installed is asked once per process, so plain
 * PostgreSQL and PGlite pay one catalog query.
 */
export class Statistics {
  readonly #tables = new Map<string, TableState>();
  #citus: Promise<boolean> | undefined;

  constructor(
    private readonly sql: Sql,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  /**
   * Counts written rows; starts a VACUUM (ANALYZE) in the background when enough have changed, and
   * returns it (requests do not wait for it).
   */
  noteWrites(table: string, rows: number): Promise<void> | undefined {
    if (rows <= 0) return undefined;
    const state = this.#tables.get(table) ?? { changed: 0, rowsAtLastAnalyze: 0 };
    this.#tables.set(table, state);
    if (state.distributed) return undefined;
    state.changed += rows;
    if (state.running || state.changed < MIN_CHANGES + CHANGED_FRACTION * state.rowsAtLastAnalyze)
      return undefined;
    return this.maintain(table, 'vacuum (analyze)');
  }

  /**
   * Analyses now, for a table whose columns just changed (an index was built); resolves when done.
   * The rebuilt table's pages are vacuumed in the background afterwards.
   */
  async analyze(table: string): Promise<void> {
    // A background VACUUM may be running: wait for it, since it analysed the table as it was.
    for (
      let running = this.#tables.get(table)?.running;
      running;
      running = this.#tables.get(table)?.running
    ) {
      await running;
    }
    await this.maintain(table, 'analyze');
    void this.maintain(table, 'vacuum');
  }

  /** Failures (say, the table was dropped meanwhile) are reported, not thrown. */
  private async maintain(table: string, command: 'analyze' | 'vacuum' | 'vacuum (analyze)'): Promise<void> {
    const state = this.#tables.get(table) ?? { changed: 0, rowsAtLastAnalyze: 0 };
    this.#tables.set(table, state);
    if (state.running) return;
    let done = () => {};
    state.running = new Promise<void>((resolve) => {
      done = resolve;
    });
    const changed = state.changed;
    try {
      if (command === 'vacuum (analyze)' && (await this.distributed(table))) {
        state.distributed = true;
        state.changed = 0;
        return;
      }
      await withoutStatementTimeout(this.sql, (conn) => conn.unsafe(`${command} ${table}`));
      const [row] = await this.sql.unsafe<{ n: number }[]>(
        `select reltuples::float8 as n from pg_class where oid = $1::text::regclass`,
        [table],
      );
      state.rowsAtLastAnalyze = Math.max(0, row?.n ?? 0);
      state.changed -= changed;
    } catch (err) {
      this.#tables.delete(table);
      this.onError(err);
    } finally {
      state.running = undefined;
      done();
    }
  }

  /** Whether Citus distributes `table` (pg_dist_partition lists it); false without Citus. */
  private async distributed(table: string): Promise<boolean> {
    this.#citus ??= citusInstalled(this.sql).catch((err: unknown) => {
      this.#citus = undefined;
      throw err;
    });
    if (!(await this.#citus)) return false;
    const [row] = await this.sql.unsafe<{ distributed: boolean }[]>(
      `select exists (select 1 from pg_catalog.pg_dist_partition where logicalrelid = $1::text::regclass) as distributed`,
      [table],
    );
    return row?.distributed === true;
  }
}
