/**
 * How many cases the generated (property) tests run: `full` times PROPERTY_SCALE. A developer's
 * `npm test` runs a third of them, which still reaches every generator's branches; CI sets
 * PROPERTY_SCALE=1 (.ci/run), and a hunt for a rare failure may set more. The seeds are printed
 * either way, so a failure found at any scale replays.
 */
const SCALE = Number(process.env.PROPERTY_SCALE ?? 1 / 3);
if (!(SCALE > 0))
  throw new Error(`PROPERTY_SCALE must be a positive number, not ${process.env.PROPERTY_SCALE}`);

export function propertyRuns(full: number): number {
  return Math.max(1, Math.round(full * SCALE));
}
