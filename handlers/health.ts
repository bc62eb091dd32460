import { pingDatabase } from '../db/connection/health.js';
import { errors } from '../errors.js';
import type { Handler, HandlerDeps } from './types.js';

const READINESS_TIMEOUT_MS = 2000;

export function healthHandlers({ sql }: HandlerDeps) {
  const getHealth: Handler<'getHealth'> = async () => ({ status: 200, body: { result: { status: 'ok' } } });

  const getReadiness: Handler<'getReadiness'> = async ({ log }) => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer within ${READINESS_TIMEOUT_MS} ms`)),
        READINESS_TIMEOUT_MS,
      );
    });
    try {
      await Promise.race([pingDatabase(sql), timeout]);
    } catch (err) {
      log.warn({ err }, 'readiness check failed');
      throw errors.serviceUnavailable('The database is not reachable.', err);
    } finally {
      clearTimeout(timer);
    }
    return { status: 200, body: { result: { status: 'ok' } } };
  };

  return { getHealth, getReadiness };
}
