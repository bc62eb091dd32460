/**
 * The index just past the JSON string whose opening quote is at `start`, or -1 if it never
 * closes. Here, in the lowest layer, because both ends of a request scan JSON text with it: the
 * body's depth and number checks (http/) before parsing, and the `_id`-first reordering of jsonb
 * (db/connection/jsonb-id-first.ts) after reading.
 */
export function stringEnd(text: string, start: number): number {
  let from = start + 1;
  for (;;) {
    const quote = text.indexOf('"', from);
    if (quote < 0) return -1;
    // The quote is escaped if an odd number of backslashes precede it.
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

const BACKSLASH = 0x5c;
