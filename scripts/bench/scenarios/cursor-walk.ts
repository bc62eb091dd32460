/** The cursor walk: the whole large collection read a page at a time with `cursor`. */
import { type Bench, call } from '../context.js';
import { median, ms, peakRss, timeIt } from '../measure.js';

/** Documents per page of the cursor walk: the read's limit. */
const WALK_PAGE = 1000;

/**
 * The whole large collection walked with `cursor`, a page at a time in an indexed sort with ties
 * (`age`, broken by `_id`), timing each page: keyset paging finds each page through the index, so
 * the last pages must cost what the first do, where `skip` reads every skipped document. The
 * target compares medians of the first and last tenth of the pages, which one slow page (the
 * machine is shared) cannot move; a skip read at the last page's depth is timed for contrast.
 */
export async function runCursorWalk(bench: Bench): Promise<void> {
  const LARGE = bench.options.large;
  const scenario = `cursor walk over ${LARGE} documents, ${WALK_PAGE} a page`;
  const url = `/v1/workplaces/${bench.workplace}/storages/large/read`;
  const body = { sort: { age: 1 }, fields: { age: 1 }, limit: WALK_PAGE };
  const times: number[] = [];
  const seen = new Set<string>();
  let lastAge = -Infinity;
  let ordered = true;
  let cursor: string | undefined;
  const walk = await peakRss(bench.api.pid, async () => {
    do {
      const t0 = performance.now();
      const page = (await call(bench, 'POST', url, { ...body, ...(cursor ? { cursor } : {}) })) as {
        result: { _id: string; age: number }[];
        next?: string;
      };
      times.push(performance.now() - t0);
      for (const d of page.result) {
        seen.add(d._id);
        if (d.age < lastAge) ordered = false;
        lastAge = d.age;
      }
      cursor = page.next;
    } while (cursor);
  });
  const skipAtEnd = median(
    await Promise.all(
      [0, 1, 2].map(() =>
        timeIt(() => call(bench, 'POST', url, { ...body, skip: Math.max(0, LARGE - WALK_PAGE) })),
      ),
    ),
  );
  const tenth = Math.max(1, Math.floor(times.length / 10));
  const first = median(times.slice(0, tenth));
  const last = median(times.slice(-tenth));
  bench.results.rows.push({ scenario, api: ms(median(times)), rssPeak: walk.peak, unit: 'ms/page' });
  const complete = seen.size === LARGE && ordered;
  bench.results.targets.push([
    'cursor walk: median page time of the last tenth <= 2 x the first tenth, every document once, in order',
    complete && last <= 2 * first,
    `${times.length} pages; first tenth ${first.toFixed(1)} ms, last tenth ${last.toFixed(1)} ms (${(last / Math.max(first, 0.01)).toFixed(2)} x); ${seen.size} distinct documents${ordered ? '' : ', OUT OF ORDER'}; skip to the last page: ${skipAtEnd.toFixed(1)} ms`,
  ]);
}
