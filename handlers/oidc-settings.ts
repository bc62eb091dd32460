import { notImplemented } from './not-implemented.js';

export function oidcSettingsHandlers() {
  return {
    getOidcSettings: notImplemented('getOidcSettings'),
    updateOidcSettings: notImplemented('updateOidcSettings'),
    generateOidcToken: notImplemented('generateOidcToken'),
  };
}
