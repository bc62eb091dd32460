/**
 * Collects bound parameters for one statement. Every value that came from a request goes through
 * here and appears in the SQL text only as `$n`; the text itself holds nothing but our own syntax
 * and identifiers taken from the catalog.
 */
export class Params {
  readonly values: string[] = [];
  #jsonpaths = new Map<string, string>();

  /**
   * A JSON value, bound as text and parsed by the server. Binding it as text keeps postgres.js
   * from choosing a type for it (it would send `true` as boolean, or JSON-encode a string twice).
   */
  json(value: unknown): string {
    this.values.push(JSON.stringify(value));
    return `$${this.values.length}::text::jsonb`;
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
