import type { Sql } from './sql.js';

/** Rows written to a table since it was last analysed, before it is analysed again. */
const MIN_CHANGES = 1000;
const CHANGED_FRACTION = 0.1;

interface TableState {
  changed: number;
  rowsAtLastAnalyze: number;
  running: boolean;
}

/**
 * Keeps the planner's statistics of collection tables fresh. PGlite has no autovacuum, so without
 * this a table loaded by the API would never be analysed, and even PostgreSQL's autovacuum leaves
 * a window after a bulk load in which the planner knows nothing of the new rows or of the key
 * columns an index just added, and picks a scan in _id order over the index. The rule is
 * autovacuum's: analyse once the rows written exceed a base plus a fraction of the table.
 */
export class Statistics {
  readonly #tables = new Map<string, TableState>();

  constructor(
    private readonly sql: Sql,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  /** Counts written rows; starts an ANALYZE in the background when enough have changed. */
  noteWrites(table: string, rows: number): void {
    if (rows <= 0) return;
    const state = this.#tables.get(table) ?? { changed: 0, rowsAtLastAnalyze: 0, running: false };
    this.#tables.set(table, state);
    state.changed += rows;
    if (state.running || state.changed < MIN_CHANGES + CHANGED_FRACTION * state.rowsAtLastAnalyze) return;
    void this.analyze(table);
  }

  /** Analyses now; resolves when done. Failures (say, the table was dropped meanwhile) are reported, not thrown. */
  async analyze(table: string): Promise<void> {
    const state = this.#tables.get(table) ?? { changed: 0, rowsAtLastAnalyze: 0, running: false };
    this.#tables.set(table, state);
    if (state.running) return;
    state.running = true;
    const changed = state.changed;
    try {
      await this.sql.unsafe(`analyze ${table}`);
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
      state.running = false;
    }
  }
}
