import { describe, expect, it } from 'vitest';
import { withoutShardSuffixes } from '../integration/storage-helpers.js';

// The task plan of a Citus worker, as EXPLAIN on the coordinator shows it: the shard's names are
// ours with the shard id appended.
const citusPlan = [
  'Custom Scan (Citus Adaptive)',
  '  Task Count: 1',
  '  Tasks Shown: All',
  '  ->  Task',
  '        Node: host=worker-1 port=5432 dbname=app',
  '        ->  Limit',
  '              ->  Index Scan using x12_a_102009 on c_7_102008 c_7',
  "                    Index Cond: ((i12_0_a > '\\x02'::bytea))",
  '              ->  Index Scan Backward using x13_102011 on c_7_102008',
  '              ->  Index Scan using c_7_pkey_102008 on c_7_102008',
  '              ->  Bitmap Index Scan on xt14_102012',
].join('\n');

describe('withoutShardSuffixes', () => {
  it('drops the shard id from our table and index names, so the EXPLAIN patterns hold on Citus', () => {
    const patterns = [
      /Index Scan using x\d+_a .*\n.*Index Cond: \(\(i\d+_0_a > /,
      /Index Scan Backward using x\d+ on/,
      /Index Scan using c_\d+_pkey on c_\d+\n/,
      /Bitmap Index Scan on xt\d+$/m,
    ];
    expect(patterns.filter((p) => p.test(citusPlan))).toHaveLength(0);
    const plan = withoutShardSuffixes(citusPlan);
    for (const p of patterns) expect(plan, plan).toMatch(p);
  });

  it('leaves names without a shard id as they are', () => {
    const plan =
      "Index Scan using x12_a on c_7 c_7\n  Index Cond: (i12_0_a = '\\x02'::bytea)\nBitmap Index Scan on xt14";
    expect(withoutShardSuffixes(plan)).toBe(plan);
  });
});
