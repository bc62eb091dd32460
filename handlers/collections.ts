import { notImplemented } from './not-implemented.js';

export function collectionHandlers() {
  return {
    listCollections: notImplemented('listCollections'),
    createCollection: notImplemented('createCollection'),
    deleteCollection: notImplemented('deleteCollection'),
  };
}
