import { stringEnd } from '../../mongo/value/json-text.js';

/**
 * Documents are returned `_id` first, as MongoDB returns them, but jsonb orders an object's keys by
 * length and then bytes: `{"n": 1, "_id": "a"}` comes back with `n` first. Reordering the parsed
 * object means copying every document key by key; reordering the text before JSON.parse moves one
 * slice and lets the parser build the object in the right order at no extra cost.
 *
 * The text is jsonb's own output (jsonb_out): `{"key": value, "key": value}`, keys sorted by byte
 * length, then bytes. Only the entries before `_id` are walked, and jsonb's order puts every key
 * longer than three bytes after it. Anything else (an array, a scalar, an object without `_id`, or
 * text that does not look like jsonb's output) is returned unchanged, so a parse gives what
 * JSON.parse would.
 */
export function idFirstJsonb(text: string): string {
  if (text.charCodeAt(0) !== OPEN_BRACE) return text;
  let pos = 1;
  while (pos < text.length && text.charCodeAt(pos) === QUOTE) {
    const keyStart = pos;
    const keyEnd = stringEnd(text, keyStart);
    if (keyEnd < 0 || text.charCodeAt(keyEnd) !== COLON) return text;
    const valueStart = keyEnd + 2; // past ": "
    const keyLength = keyEnd - keyStart - 2;
    if (keyLength === 3 && text.startsWith('_id"', keyStart + 1)) {
      if (keyStart === 1) return text;
      const valueEnd = valueEndAt(text, valueStart);
      if (valueEnd < 0) return text;
      // `{before, "_id": v, after}` -> `{"_id": v, before, after}` (keyStart - 2 drops ", ").
      return `{${text.slice(keyStart, valueEnd)}, ${text.slice(1, keyStart - 2)}${text.slice(valueEnd)}`;
    }
    // Without escapes a key of more than three characters has more than three bytes, so it and
    // every key after it sort after `_id`: there is none.
    if (keyLength > 3 && text.lastIndexOf('\\', keyEnd - 2) < keyStart) return text;
    const valueEnd = valueEndAt(text, valueStart);
    if (valueEnd < 0 || text.charCodeAt(valueEnd) !== COMMA) return text;
    pos = valueEnd + 2; // past ", "
  }
  return text;
}

/**
 * idFirstJsonb on the text's UTF-8 bytes (a raw column value), for documents sent on without being
 * parsed. Read as Latin-1 each byte is one character: every character the reordering looks for is
 * ASCII and no multi-byte UTF-8 sequence contains an ASCII byte, so it works on the bytes as they
 * are, with lengths in bytes as jsonb orders keys. The result is Latin-1 too:
 * `Buffer.from(result, 'latin1')` gives the reordered UTF-8 bytes.
 */
export function idFirstJsonbBytes(bytes: Buffer): string {
  return idFirstJsonb(bytes.toString('latin1'));
}

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const COLON = 0x3a;
const COMMA = 0x2c;

/** The index just past the value that starts at `start` (a string, object, array or scalar), or -1. */
function valueEndAt(text: string, start: number): number {
  const first = text.charCodeAt(start);
  if (first === QUOTE) return stringEnd(text, start);
  if (first === OPEN_BRACE || first === OPEN_BRACKET) {
    let depth = 0;
    for (let i = start; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === QUOTE) {
        const end = stringEnd(text, i);
        if (end < 0) return -1;
        i = end - 1;
      } else if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
      else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        depth--;
        if (depth === 0) return i + 1;
      }
    }
    return -1;
  }
  // A number, true, false or null: up to the next separator.
  for (let i = start; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === COMMA || c === CLOSE_BRACE) return i;
  }
  return -1;
}

/**
 * postgres.js's handling of jsonb with documents parsed `_id` first; what it sends is unchanged
 * (its default jsonb serializer).
 */
export const jsonbIdFirst = {
  to: 3802,
  from: [3802],
  serialize: (value: unknown) => JSON.stringify(value),
  parse: (text: string) => JSON.parse(idFirstJsonb(text)),
};
