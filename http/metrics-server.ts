import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * The management port (METRICS_PORT): `GET /metrics` in Prometheus's text format and nothing else,
 * without authentication, as Keycloak's and PostgREST's are. Apart from the API's port, so that it
 * can stay inside the cluster network while the API is published.
 */
export async function startMetricsServer(options: {
  host: string;
  port: number;
  contentType: string;
  /** This process's metrics, or with workers every worker's added up. */
  metrics: () => Promise<string>;
  onError: (err: unknown) => void;
}): Promise<MetricsServer> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (path !== '/metrics') {
      response
        .writeHead(404, { 'content-type': 'text/plain; charset=utf-8' })
        .end('Not found: GET /metrics\n');
      return;
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end();
      return;
    }
    options.metrics().then(
      (text) => {
        response.writeHead(200, { 'content-type': options.contentType, 'cache-control': 'no-store' });
        response.end(request.method === 'HEAD' ? undefined : text);
      },
      (err: unknown) => {
        options.onError(err);
        response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('Metrics unavailable\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
