import { describe, expect, it } from 'vitest';
import { toAppError } from '../../errors.js';

/**
 * Errors that mean "the database, or the part of it a request needs, is away for now" are a 503
 * with Retry-After, never a 500. The Citus cases are the errors its coordinator raised here while a
 * worker was stopped (test/citus/worker-outage.test.ts stops one under a running server).
 */
describe('errors of a database that is away', () => {
  const cases: Array<[string, { code: string; message: string }, number]> = [
    ['a connection PostgreSQL refused', { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED' }, 503],
    [
      'PostgreSQL shutting down',
      { code: '57P01', message: 'terminating connection due to administrator command' },
      503,
    ],
    [
      'Citus: a new connection to a stopped worker',
      {
        code: '08006',
        message:
          'connection to the remote node postgres@127.0.0.1:55702 failed with the following error: Connection refused',
      },
      503,
    ],
    [
      'Citus: a cached connection to a worker that went away',
      { code: 'XX000', message: 'failure on connection marked as essential: 127.0.0.1:55702' },
      503,
    ],
    ['another internal error', { code: 'XX000', message: 'invalid attnum -2 for rangetable entry c_1' }, 500],
  ];
  it.each(cases)('%s', (_name, err, status) => {
    const mapped = toAppError(Object.assign(new Error(err.message), err), 1024);
    expect(mapped.status).toBe(status);
  });
});
