import { errors } from '../errors.js';
import type { Handler, OperationId } from './types.js';

/** A placeholder for an operation of the contract whose issue has not landed yet: answers 501. */
export function notImplemented<Op extends OperationId>(operationId: Op): Handler<Op> {
  return async () => {
    throw errors.notImplemented(operationId);
  };
}
