import { notImplemented } from './not-implemented.js';

export function indexHandlers() {
  return {
    listIndexes: notImplemented('listIndexes'),
    createIndex: notImplemented('createIndex'),
    deleteIndex: notImplemented('deleteIndex'),
  };
}
