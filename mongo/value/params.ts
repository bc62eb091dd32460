import { scalarKey } from './bson-key.js';
import type { Json } from './json.js';

/**
 * Collects bound parameters for one statement. Every value that came from a request goes through
 * here and appears in the SQL text only as `$n`; the text itself holds nothing but our own syntax
 * and identifiers taken from the catalog.
 */
export class Params {
  readonly values: (string | Buffer)[] = [];
  #jsonpaths = new Map<string, string>();

  /**
   * A JSON value, bound as text and parsed by the server. Binding it as text keeps postgres.js
   * from choosing a type for it (it would send `true` as boolean, or JSON-encode a string twice).
   * The parse is a sub-select, which PostgreSQL runs once per execution (an InitPlan): a bare
   * `$n::text::jsonb` is folded into a constant by a custom plan, but parsed again for every row
   * by the generic plan that a prepared statement runs from its sixth execution on.
   */
  json(value: unknown): string {
    this.values.push(JSON.stringify(value));
    return `(select $${this.values.length}::text::jsonb)`;
  }

  /**
   * A JSON value for an expression evaluated once per execution anyway (a sub-select's, a
   * function scan's): bare `$n::text::jsonb`, which json() wraps in a sub-select.
   */
  jsonValue(value: unknown): string {
    this.values.push(JSON.stringify(value));
    return `$${this.values.length}::text::jsonb`;
  }

  /**
   * Text bound as a parameter of type `type` (`text[]`, `numeric`, `regconfig`): PostgreSQL parses
   * it once, as it binds the parameter. `$n::text::numeric` would instead cast a text parameter,
   * again for every row in a generic plan.
   */
  typed(value: string, type: string): string {
    this.values.push(value);
    return `$${this.values.length}::${type}`;
  }

  bytes(value: Buffer): string {
    this.values.push(value);
    return `$${this.values.length}::bytea`;
  }

  /**
   * mdb.key() of a value, cut to `cut` bytes when given (the key columns' length). Computed here
   * and bound as bytea where bson-key.ts can, so that the statement compares columns with a
   * parameter; in SQL, once per execution, otherwise.
   */
  key(value: Json, cut?: number): string {
    const key = scalarKey(value);
    if (key) return this.bytes(cut !== undefined && key.length > cut ? key.subarray(0, cut) : key);
    const k = `mdb.key(${this.jsonValue(value)})`;
    return `(select ${cut !== undefined ? `substr(${k}, 1, ${cut})` : k})`;
  }

  text(value: string): string {
    this.values.push(value);
    return `$${this.values.length}::text`;
  }

  int(value: number): string {
    this.values.push(String(value));
    return `$${this.values.length}::bigint`;
  }

  /** A jsonpath, bound once however often the statement uses it. */
  jsonpath(path: string): string {
    let ref = this.#jsonpaths.get(path);
    if (!ref) {
      this.values.push(path);
      ref = `$${this.values.length}::jsonpath`;
      this.#jsonpaths.set(path, ref);
    }
    return ref;
  }

  jsonpathArray(paths: string[]): string {
    this.values.push(toArrayLiteral(paths));
    return `$${this.values.length}::jsonpath[]`;
  }
}

/** A PostgreSQL array literal of strings; every element quoted, so no element can break out. */
export function toArrayLiteral(items: string[]): string {
  return `{${items.map((s) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`).join(',')}}`;
}
