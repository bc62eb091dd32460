import { describe, expect, it } from 'vitest';
import { PreparedBudget, preparedBudgetOf, StatementTexts } from '../../db/storage/statement-texts.js';

describe('StatementTexts', () => {
  it('gives back a text equal to the one asked for, built however it was', () => {
    const pool = new StatementTexts(1000, new PreparedBudget());
    const table = 'wp_a.c_b';
    const first = pool.use(`select doc from ${table} where id = $1`).text;
    const again = pool.use(['select doc from ', table, ' where id = $1'].join('')).text;
    expect(first).toBe('select doc from wp_a.c_b where id = $1');
    expect(again).toBe(first);
    expect(pool.size).toBe(1);
  });

  it('keeps each distinct text once', () => {
    const pool = new StatementTexts(1000, new PreparedBudget());
    for (let i = 0; i < 50; i++) pool.use(`select ${i % 5}`).text;
    expect(pool.size).toBe(5);
  });

  it('never holds more than its bound: many collections do not grow it without end', () => {
    const pool = new StatementTexts(100, new PreparedBudget());
    for (let i = 0; i < 1000; i++) {
      expect(pool.use(`select doc from wp_x.c_${i}`).text).toBe(`select doc from wp_x.c_${i}`);
      expect(pool.size).toBeLessThanOrEqual(100);
    }
  });
});

describe('which texts are prepared', () => {
  it('prepares a text from its second use, within the connection pool’s budget per epoch', () => {
    let clock = 0;
    const budget = new PreparedBudget(2, 1000, () => clock);
    const pool = new StatementTexts(100, budget);
    expect(pool.use('select 1').options.prepare).toBe(false);
    expect(pool.use('select 1').options.prepare).toBe(true);
    expect(pool.use('select 1').options.prepare).toBe(true);
    pool.use('select 2');
    expect(pool.use('select 2').options.prepare).toBe(true);
    // The budget is spent: a third text runs unprepared, however often.
    pool.use('select 3');
    expect(pool.use('select 3').options.prepare).toBe(false);
    expect(pool.use('select 3').options.prepare).toBe(false);
    // Another collection's texts on the same connection pool share the budget.
    const other = new StatementTexts(100, budget);
    other.use('select 4');
    expect(other.use('select 4').options.prepare).toBe(false);
    // A new epoch: every text is granted afresh and counted again.
    clock = 1000;
    expect(pool.use('select 3').options.prepare).toBe(true);
    expect(pool.use('select 1').options.prepare).toBe(true);
    expect(pool.use('select 2').options.prepare).toBe(false);
  });

  it('counts distinct texts: a collection ref read anew prepares the texts granted before at once, without spending the budget again', () => {
    const budget = new PreparedBudget(2, 1000, () => 0);
    const first = new StatementTexts(100, budget);
    first.use('select 1');
    expect(first.use('select 1').options.prepare).toBe(true);
    // The catalog cache replaces a collection's ref, and its pool, every few seconds.
    for (let i = 0; i < 10; i++) {
      const next = new StatementTexts(100, budget);
      expect(next.use('select 1').options.prepare).toBe(true);
      expect(next.use('select 1').options.prepare).toBe(true);
    }
    const last = new StatementTexts(100, budget);
    last.use('select 2');
    expect(last.use('select 2').options.prepare).toBe(true);
  });

  it('gives each connection pool a budget of its own, the same one at every lookup', () => {
    const pool = {};
    const other = {};
    expect(preparedBudgetOf(pool)).toBe(preparedBudgetOf(pool));
    expect(preparedBudgetOf(other)).not.toBe(preparedBudgetOf(pool));
  });
});
