import { notImplemented } from './not-implemented.js';

export function documentHandlers() {
  return {
    readDocuments: notImplemented('readDocuments'),
    createDocuments: notImplemented('createDocuments'),
    updateDocuments: notImplemented('updateDocuments'),
    countDocuments: notImplemented('countDocuments'),
    deleteDocuments: notImplemented('deleteDocuments'),
  };
}
