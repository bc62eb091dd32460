/** What the scenarios measured, as the ratios, the targets' PASS/FAIL and the tables printed at the end. */
import type { Bench, Figures, Results, Row } from './context.js';

/** How much slower the large collection answers: mean latency, which p50's whole ms would blur. */
export function latencyRatio(small: Figures, large: Figures): number {
  return (large.mean ?? large.p50) / Math.max(small.mean ?? small.p50, 0.01);
}

/** `0.80 (0.74-0.86)`: the median ratio and the lowest and highest pair. */
function withSpread(ratio: number | undefined, pairs: number[] = []): string {
  const spread =
    pairs.length > 1 ? ` (${Math.min(...pairs).toFixed(2)}-${Math.max(...pairs).toFixed(2)})` : '';
  return `${ratio?.toFixed(2)}${spread}`;
}
export const ratioWithSpread = (r: Row) => withSpread(r.ratio, r.pairRatios);
export const handRatioWithSpread = (r: Row) => withSpread(r.handRatio, r.handPairRatios);

/** The hand-written target of a write scenario: the least share of its rate the API must reach. */
export function handTarget(results: Results, row: Row, share: number, unit = 'req/s'): void {
  if (!row.hand) return;
  results.targets.push([
    `${row.scenario}: >= ${share} x hand-written ${unit}`,
    (row.handRatio as number) >= share,
    `${handRatioWithSpread(row)} x`,
  ]);
}

export function report({ options, procs, results }: Bench) {
  const { rows, scaling, targets, workers } = results;
  const { embedded, small, large, connections, runs, duration, cpuProf } = options;
  const f = (n: number, d = 0) => n.toFixed(d).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const cpu = (r: Row, k: 'cpu' | 'pg' | 'machine') => {
    const a = r.api[k];
    if (a === undefined) return '';
    const other = (x: Figures | undefined, present: boolean) =>
      present ? ` / ${x?.[k] === undefined ? '-' : f(x[k] as number)}` : '';
    return `${f(a)}${other(r.base, r.base !== undefined || r.hand !== undefined)}${other(r.hand, r.hand !== undefined)}`;
  };
  const lines = [
    `\nBenchmark: ${embedded ? 'embedded PGlite' : 'PostgreSQL'}, ${small} and ${large} documents, ${connections} connections, median of ${runs} runs of ${duration} s (ratios: the median of adjacent API and baseline runs, then the lowest and highest of those pairs), Node ${process.version}\n`,
    '| scenario | unit | API | p50 ms | p99 ms | baseline (our SQL) | p50 ms | p99 ms | API / baseline | hand-written | p50 ms | p99 ms | API / hand-written | CPU us/req (API / baseline / hand-written): server | PostgreSQL | whole machine | server peak RSS MB |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    const unit = r.unit ?? 'req/s';
    const value = (x: Figures) =>
      unit === 'docs/s' ? f(x.rps * 1000) : unit.startsWith('ms') ? f(x.p50) : f(x.rps);
    const ratioTo = (other: Figures | undefined, ratio: number | undefined, spread: string) =>
      !other
        ? 'n/a'
        : unit.startsWith('ms')
          ? (r.api.p50 / Math.max(other.p50, 1)).toFixed(2)
          : ratio === undefined
            ? (r.api.rps / other.rps).toFixed(2)
            : spread;
    const ratio = ratioTo(r.base, r.ratio, ratioWithSpread(r));
    const handRatio = ratioTo(r.hand, r.handRatio, handRatioWithSpread(r));
    lines.push(
      `| ${r.scenario} | ${unit} | ${value(r.api)} | ${r.api.p50} | ${r.api.p99} | ${r.base ? value(r.base) : 'n/a'} | ${r.base?.p50 ?? ''} | ${r.base?.p99 ?? ''} | ${ratio} | ${r.hand ? value(r.hand) : 'n/a'} | ${r.hand?.p50 ?? ''} | ${r.hand?.p99 ?? ''} | ${handRatio} | ${cpu(r, 'cpu')} | ${cpu(r, 'pg')} | ${cpu(r, 'machine')} | ${f(r.rssPeak)} |`,
    );
  }
  lines.push(
    '',
    `| read scenario | req/s at ${small} | mean ms | req/s at ${large} | mean ms | latency ratio |`,
    '|---|---:|---:|---:|---:|---:|',
  );
  for (const s of scaling) {
    const note = s.sameWork ? '' : ' (more work at the larger size)';
    lines.push(
      `| ${s.name}${note} | ${f(s.small.rps)} | ${s.small.mean?.toFixed(2)} | ${f(s.large.rps)} | ${s.large.mean?.toFixed(2)} | ${latencyRatio(s.small, s.large).toFixed(2)} |`,
    );
  }
  if (workers.length) {
    lines.push(
      '',
      `| read scenario (${large} docs) | req/s, 1 process | req/s, ${options.workers} processes | ${options.workers} / 1 |`,
      '|---|---:|---:|---:|',
    );
    for (const w of workers)
      lines.push(
        `| ${w.name} | ${f(w.one.rps)} | ${f(w.many.rps)} | ${(w.many.rps / w.one.rps).toFixed(2)} |`,
      );
  }
  lines.push('', '| target | result | measured |', '|---|---|---|');
  for (const [name, ok, measured] of targets)
    lines.push(`| ${name} | ${ok ? 'PASS' : 'FAIL'} | ${measured} |`);
  const failed = targets.filter(([, ok]) => !ok).map(([name]) => name);
  lines.push(
    '',
    `Targets: ${targets.length - failed.length} of ${targets.length} PASS${failed.length ? `; FAIL: ${failed.join('; ')}` : ''}`,
  );
  if (embedded)
    lines.push(
      '',
      'Embedded: the baseline and the hand-written server need their own connections to the database, which PGlite (one process) cannot give; ratios are n/a.',
    );
  lines.push(
    '',
    `Server and baseline logs: ${procs.logDir}${cpuProf ? `; CPU profiles of both: ${cpuProf}` : ''}`,
  );
  console.log(lines.join('\n'));
}
