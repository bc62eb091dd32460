import { describe, expect, it } from 'vitest';
import { uniqueViolationOf } from '../../db/storage/unique-violation.js';

// The fields postgres.js gives a 23505, as PostgreSQL 15 sends them (captured), and as Citus relays
// a worker's violation: the shard's constraint name in the message and no constraint_name.
const postgres = (constraint: string, detail = 'Key (id)=(1) already exists.') => ({
  name: 'PostgresError',
  severity: 'ERROR',
  code: '23505',
  detail,
  schema_name: 'w_3',
  table_name: 'c_7',
  constraint_name: constraint,
  routine: '_bt_check_unique',
  message: `duplicate key value violates unique constraint "${constraint}"`,
});
const citus = (constraint: string, detail = 'Key (id)=(1) already exists.') => ({
  name: 'PostgresError',
  severity: 'ERROR',
  code: '23505',
  detail,
  message: `duplicate key value violates unique constraint "${constraint}"`,
});

describe('uniqueViolationOf', () => {
  it.each([
    ['the primary key, by constraint_name', postgres('c_7_pkey'), { on: 'id' }],
    [
      'a unique index, by constraint_name',
      postgres('x12_u', 'Key (i12_0_a)=(\\x02) already exists.'),
      { on: 'index', indexId: '12' },
    ],
    ['the primary key, from the message', citus('c_7_pkey'), { on: 'id' }],
    ["a shard's primary key", citus('c_7_pkey_102008'), { on: 'id' }],
    ['a unique index, from the message', citus('x12_u'), { on: 'index', indexId: '12' }],
    ["a shard's unique index", citus('x12_u_102009'), { on: 'index', indexId: '12' }],
    ["a shard's name in constraint_name", postgres('x12_u_102009'), { on: 'index', indexId: '12' }],
    [
      'a localized message',
      { code: '23505', message: 'doppelter Schlüsselwert verletzt Unique-Constraint »x12_u_102009«' },
      { on: 'index', indexId: '12' },
    ],
  ])('%s', (_name, err, expected) => {
    expect(uniqueViolationOf(err)).toEqual(expected);
  });

  it.each([
    ['a constraint of ours with more to its name', citus('x12_ux')],
    ['an index that is not unique', citus('x12_a_102009')],
    ['a catalog constraint', postgres('workplaces_name_key')],
    ['no name anywhere', { code: '23505' }],
  ])('%s is unknown', (_name, err) => {
    expect(uniqueViolationOf(err)).toEqual({ on: 'unknown' });
  });

  it('never reads the detail, which carries the document values', () => {
    const err = citus('c_7_pkey_102008', 'Key (id)=(x12_u) already exists.');
    expect(uniqueViolationOf(err)).toEqual({ on: 'id' });
    expect(uniqueViolationOf({ code: '23505', detail: 'Key (i1_0_a)=(x12_u) already exists.' })).toEqual({
      on: 'unknown',
    });
  });
});
