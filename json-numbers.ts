/**
 * JSON allows numbers of any size, and JSON.parse turns those beyond a double into Infinity, which
 * JSON.stringify and jsonb then turn into null: a value would change silently on its way in.
 */

/**
 * Whether the text may hold such a number: an exponent of three digits or more, or 309 digits in a
 * row. Cheap to test on every body; a match (even inside a string) only means the parsed value is
 * walked by `nonFiniteNumberAt`.
 */
const MAYBE_OUT_OF_RANGE = /[eE][+-]?\d{3}|\d{309}/;

export function mayHoldOutOfRangeNumber(text: string): boolean {
  return MAYBE_OUT_OF_RANGE.test(text);
}

/** The JSON Pointer of the first number in `value` that is not finite, if there is one. */
export function nonFiniteNumberAt(value: unknown, path = ''): string | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : path;
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, v] of Object.entries(value)) {
    const found = nonFiniteNumberAt(v, `${path}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`);
    if (found !== undefined) return found;
  }
  return undefined;
}
