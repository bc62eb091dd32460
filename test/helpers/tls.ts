// TLS in front of a server, as production has it: a certificate made now, a reverse proxy that ends
// TLS and forwards plain HTTP, and a fetch that trusts that certificate (and nothing else new).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer, request as httpsRequest, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { tempDir } from './server-process.js';

export interface Certificate {
  key: string;
  cert: string;
}

/** A self-signed certificate for localhost and 127.0.0.1, made by openssl, valid for a day. */
export function makeCertificate(): Certificate {
  const dir = tempDir();
  const keyPath = join(dir, 'key.pem');
  const certPath = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-keyout',
      keyPath,
      '-out',
      certPath,
    ],
    { stdio: 'pipe' },
  );
  return { key: readFileSync(keyPath, 'utf8'), cert: readFileSync(certPath, 'utf8') };
}

export interface TlsProxy {
  /** https://localhost:<port> */
  origin: string;
  /** Every request as the upstream server got it: method, path and headers. */
  forwarded: { method: string; path: string; headers: Record<string, string | string[] | undefined> }[];
  close(): Promise<void>;
}

/**
 * A TLS-terminating reverse proxy to `upstream` (http://host:port), configured as operators
 * configure nginx: the Host header passed on, X-Forwarded-Proto/-Host/-For added, and a path
 * prefix (`stripPrefix`) taken off, as when the API is published below a path.
 */
export async function startTlsProxy(
  certificate: Certificate,
  upstream: string,
  stripPrefix = '',
): Promise<TlsProxy> {
  const target = new URL(upstream);
  const forwarded: TlsProxy['forwarded'] = [];
  const server: Server = createServer(certificate, (req, res) => {
    let path = req.url ?? '/';
    if (stripPrefix) {
      if (!path.startsWith(`${stripPrefix}/`)) {
        res.writeHead(404).end();
        return;
      }
      path = path.slice(stripPrefix.length);
    }
    const headers = {
      ...req.headers,
      'x-forwarded-proto': 'https',
      'x-forwarded-host': req.headers.host,
      'x-forwarded-for': req.socket.remoteAddress,
    };
    forwarded.push({ method: req.method ?? 'GET', path, headers });
    const upstreamRequest = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path, headers },
      (upstreamResponse) => {
        res.writeHead(upstreamResponse.statusCode ?? 502, upstreamResponse.rawHeaders);
        upstreamResponse.pipe(res);
      },
    );
    upstreamRequest.on('error', () => res.writeHead(502).end());
    req.pipe(upstreamRequest);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `https://localhost:${(server.address() as AddressInfo).port}`,
    forwarded,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * fetch over node:https trusting `ca` (Node 20's global fetch takes no CA, and NODE_EXTRA_CA_CERTS
 * is read only at start). Enough of fetch for a relying party and a browser without JavaScript:
 * string or form bodies, redirects never followed, every Set-Cookie kept.
 */
export function fetchTrusting(ca: string): typeof fetch {
  return (async (input: string | URL | Request, init: RequestInit = {}) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.protocol !== 'https:') return fetch(input, init);
    const headers = Object.fromEntries(new Headers(init.headers).entries());
    const body = init.body === undefined || init.body === null ? undefined : String(init.body);
    if (body !== undefined && !(typeof init.body === 'string' || init.body instanceof URLSearchParams)) {
      throw new TypeError('fetchTrusting sends string and URLSearchParams bodies only');
    }
    if (init.body instanceof URLSearchParams) {
      headers['content-type'] ??= 'application/x-www-form-urlencoded;charset=UTF-8';
    }
    return new Promise<Response>((resolve, reject) => {
      const req = httpsRequest(url, { method: init.method ?? 'GET', headers, ca }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const out = new Headers();
          for (let i = 0; i < res.rawHeaders.length; i += 2) {
            out.append(res.rawHeaders[i] as string, res.rawHeaders[i + 1] as string);
          }
          const status = res.statusCode ?? 500;
          const empty = status === 204 || status === 304;
          resolve(new Response(empty ? null : Buffer.concat(chunks), { status, headers: out }));
        });
      });
      req.on('error', reject);
      init.signal?.addEventListener('abort', () => req.destroy(new Error('aborted')));
      req.end(body);
    });
  }) as typeof fetch;
}
