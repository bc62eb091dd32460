import { stringEnd } from '../mongo/value/json-text.js';

/**
 * How deep a request body may nest. Validators, serialisers and our own tree walks recurse, and a
 * 16 MiB body can nest millions deep; refusing at parse time keeps every one of them safe. The
 * deepest legitimate body (a document of depth 100 inside an update) stays well inside.
 */
export const MAX_JSON_DEPTH = 128;

export interface JsonTextScan {
  /** The text opens more than the given number of arrays or objects inside one another. */
  tooDeep: boolean;
  /**
   * Every number in the text is spelled as JSON.stringify spells the double JSON.parse reads from
   * it, so the text stores as its parsed value written out again would: a bulk insert can hand
   * PostgreSQL the body as it came instead of serializing a thousand parsed documents.
   */
  numbersAsWritten: boolean;
}

const isDigit = (c: number) => c >= 0x30 && c <= 0x39;

/**
 * The index just past the number starting at `start` when JSON.stringify would write its double
 * the same way, otherwise -1. That holds for a number without an exponent, without a trailing zero
 * in its fraction, with at most 15 significant digits (a double keeps any such decimal exactly, and
 * its shortest spelling is that decimal), not below 1e-6 (written with an exponent), and not -0.
 * Anything else (1.50, 1e2, 0.1000000000000000055) counts as rewritten, which only means the slower
 * path.
 */
function writtenNumberEnd(text: string, start: number): number {
  let i = start;
  const negative = text.charCodeAt(i) === 0x2d; /* - */
  if (negative) i++;
  let significant = 0;
  if (text.charCodeAt(i) === 0x30 /* 0 */) i++;
  else
    while (isDigit(text.charCodeAt(i))) {
      significant++;
      i++;
    }
  if (text.charCodeAt(i) === 0x2e /* . */) {
    i++;
    let zerosBefore = 0;
    let last = 0;
    for (let c = text.charCodeAt(i); isDigit(c); c = text.charCodeAt(++i)) {
      if (significant > 0 || c !== 0x30) significant++;
      else zerosBefore++;
      last = c;
    }
    if (last === 0x30 || zerosBefore >= 6) return -1;
  }
  const c = text.charCodeAt(i);
  if (c === 0x65 /* e */ || c === 0x45 /* E */) return -1;
  if (significant > 15 || (negative && significant === 0)) return -1;
  return i;
}

/**
 * A linear scan of the text, before JSON.parse, so that nothing recursive ever sees an over-deep
 * value; the same pass looks at each number. Strings are skipped with indexOf rather than
 * character by character: a bulk insert's body is mostly strings, and a loop over each of their
 * characters was a visible part of its cost.
 */
export function scanJsonText(text: string, maxDepth: number): JsonTextScan {
  let depth = 0;
  let numbersAsWritten = true;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      const end = stringEnd(text, i);
      if (end < 0) break;
      i = end - 1;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > maxDepth) return { tooDeep: true, numbersAsWritten: false };
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
    } else if (numbersAsWritten && (c === 0x2d /* - */ || isDigit(c))) {
      const end = writtenNumberEnd(text, i);
      if (end < 0) numbersAsWritten = false;
      else i = end - 1;
    }
  }
  return { tooDeep: false, numbersAsWritten };
}
