import { stringEnd } from '../db/query/json-text.js';

/**
 * How deep a request body may nest. Validators, serialisers and our own tree walks recurse, and a
 * 16 MiB body can nest millions deep; refusing at parse time keeps every one of them safe. The
 * deepest legitimate body (a document of depth 100 inside an update) stays well inside.
 */
export const MAX_JSON_DEPTH = 128;

/**
 * Whether JSON text opens more than `max` arrays or objects inside one another. A linear scan of
 * the text, before JSON.parse, so that nothing recursive ever sees an over-deep value. Strings are
 * skipped with indexOf rather than character by character: a bulk insert's body is mostly strings,
 * and a loop over each of their characters was a visible part of its cost.
 */
export function jsonNestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      const end = stringEnd(text, i);
      if (end < 0) return false;
      i = end - 1;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > max) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
    }
  }
  return false;
}
