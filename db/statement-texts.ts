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
 * Each collection ref holds its own pool (db/collections.ts): texts name its table, and the catalog
 * cache hands one ref to every request until the entry expires. Bounded: past `max` distinct texts
 * the pool starts over rather than grow.
 */
export class StatementTexts {
  readonly #texts = new Map<string, string>();

  constructor(readonly max = 1000) {}

  /** The pool's string equal to `text` (`text` itself the first time). */
  shared(text: string): string {
    const known = this.#texts.get(text);
    if (known !== undefined) return known;
    if (this.#texts.size >= this.max) this.#texts.clear();
    this.#texts.set(text, text);
    return text;
  }

  get size(): number {
    return this.#texts.size;
  }
}
