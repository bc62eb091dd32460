import { escapePointer } from '../errors.js';
import { stringEnd } from '../mongo/value/json-text.js';

/**
 * JSON allows numbers of any size and precision; JSON.parse reads each as the nearest double, and
 * documents and query values are written back out with JSON.stringify, as the shortest decimal
 * that reads back as that double. Two kinds of number would change silently on the way, so they
 * are refused: numbers beyond a double's range (parsed as Infinity, written as null), and integer
 * literals that would be written as another integer (9007199254740993 as 9007199254740992: a
 * client sending a 64-bit id means every digit). Integers that come back as sent are kept at any
 * size (1152921504606847000, which is how JavaScript writes 2**60), and a literal with a fraction
 * or an exponent (`0.1`, `1e300`) asks for a double and keeps the nearest one.
 */
export type UnsafeNumber = 'range' | 'integer';

/**
 * Whether the text may hold such a number: an exponent of three digits or more, 309 digits in a
 * row, or an integer literal of 16 digits or more (doubles hold every integer below 2^53, which has
 * 16). A run of digits in a fraction or before one is a double's and no integer literal: a body of
 * computed numbers such as 0.30000000000000004 is not scanned, which would cost more than parsing
 * it. Cheap to test on every body; a match (even inside a string) only means the text is scanned by
 * `unsafeNumberAt`.
 */
const MAYBE_UNSAFE = /[eE][+-]?\d{3}|\d{309}|(?<![.\d])\d{16,}(?![.\deE])/;

export function mayHoldUnsafeNumber(text: string): boolean {
  return MAYBE_UNSAFE.test(text);
}

const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;

/** One open object or array: the pointer to it, and where in it the scan is. */
interface Frame {
  pointer: string;
  array: boolean;
  index: number;
  key: string;
  expectKey: boolean;
}

/** The integer that JSON.stringify writes for an integral double (`1.2e+21` spelled out). */
function writtenInteger(value: number): bigint {
  const [mantissa = '', exponent = '0'] = JSON.stringify(value).split('e');
  const [whole = '', fraction = ''] = mantissa.split('.');
  return BigInt(whole + fraction) * 10n ** BigInt(Number(exponent) - fraction.length);
}

/**
 * The JSON Pointer of the first unsafe number in `text`, which must be valid JSON, and why it is
 * unsafe. A scan of the text rather than a walk of the parsed value: only the text tells `1e20`
 * (a double) from `100000000000000000000` (an integer), and the text keeps every key in place.
 */
export function unsafeNumberAt(
  text: string,
): { pointer: string; reason: UnsafeNumber; stored: string } | undefined {
  const frames: Frame[] = [];
  const here = (): string => {
    const top = frames[frames.length - 1];
    if (top === undefined) return '';
    return `${top.pointer}/${top.array ? top.index : escapePointer(top.key)}`;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    const top = frames[frames.length - 1];
    if (c === '"') {
      const end = stringEnd(text, i);
      if (end < 0) return undefined;
      if (top !== undefined && !top.array && top.expectKey) {
        top.key = JSON.parse(text.slice(i, end)) as string;
        top.expectKey = false;
      }
      i = end - 1;
    } else if (c === '{' || c === '[') {
      frames.push({ pointer: here(), array: c === '[', index: 0, key: '', expectKey: c === '{' });
    } else if (c === '}' || c === ']') {
      frames.pop();
    } else if (c === ',') {
      if (top?.array) top.index++;
      else if (top !== undefined) top.expectKey = true;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      NUMBER.lastIndex = i;
      const m = NUMBER.exec(text);
      if (m === null) return undefined;
      const value = Number(m[0]);
      if (!Number.isFinite(value)) return { pointer: here(), reason: 'range', stored: 'null' };
      const integer = m[1] === undefined && m[2] === undefined;
      if (integer && !Number.isSafeInteger(value)) {
        const stored = writtenInteger(value);
        if (stored !== BigInt(m[0])) return { pointer: here(), reason: 'integer', stored: String(stored) };
      }
      i += m[0].length - 1;
    }
  }
  return undefined;
}
