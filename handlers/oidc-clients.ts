import { notImplemented } from './not-implemented.js';

export function oidcClientHandlers() {
  return {
    readClients: notImplemented('readClients'),
    saveClient: notImplemented('saveClient'),
    deleteClient: notImplemented('deleteClient'),
  };
}
