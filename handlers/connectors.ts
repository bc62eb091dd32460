import { notImplemented } from './not-implemented.js';

export function connectorHandlers() {
  return {
    listConnectors: notImplemented('listConnectors'),
    createConnector: notImplemented('createConnector'),
    updateConnector: notImplemented('updateConnector'),
    deleteConnector: notImplemented('deleteConnector'),
  };
}
