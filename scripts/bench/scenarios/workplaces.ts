/** The workplace scenario: a workplace and a collection created, then the workplace deleted. */
import { randomBytes } from 'node:crypto';
import { type Bench, call, type Row } from '../context.js';
import { ms, peakRss, profiled, timeIt } from '../measure.js';

/** Workplace + collection create/delete cycle. */
export async function runWorkplaceCycle(bench: Bench): Promise<void> {
  const baseline = bench.baseline?.url ?? '';
  const letters = () =>
    randomBytes(8)
      .toString('hex')
      .replace(/\d/g, (d) => String.fromCharCode(103 + Number(d)));
  const cycles = 20;
  const cycleScenario = 'workplace + collection create/delete';
  let apiCycle = { result: 0, peak: 0 };
  let baseCycle: number | undefined;
  await profiled(
    bench,
    cycleScenario,
    async () => {
      apiCycle = await peakRss(bench.api.pid, () =>
        timeIt(async () => {
          for (let i = 0; i < cycles; i++) {
            const name = `cyc${letters()}`;
            await call(bench, 'POST', '/v1/workplaces', { name });
            await call(bench, 'POST', `/v1/workplaces/${name}/storages`, { name: 'things' });
            await call(bench, 'DELETE', `/v1/workplaces/${name}`);
          }
        }),
      );
      if (baseline) {
        baseCycle = await timeIt(async () => {
          for (let i = 0; i < cycles; i++) {
            const res = await fetch(`${baseline}/cycle`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ v: [letters()] }),
            });
            await res.text();
          }
        });
      }
    },
    // Each cycle is three requests to the API and one to the baseline.
    () => [cycles * 3, baseline ? cycles : 0],
  );
  const cycleRow: Row = {
    scenario: cycleScenario,
    api: ms(apiCycle.result / cycles),
    rssPeak: apiCycle.peak,
    unit: 'ms/cycle',
  };
  if (baseCycle !== undefined) cycleRow.base = ms(baseCycle / cycles);
  bench.results.rows.push(cycleRow);
}
