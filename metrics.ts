import client from 'prom-client';

/**
 * The Prometheus metrics of this process (prom-client's global registry, which node:cluster's
 * aggregation reads in every worker: server.ts serves them on METRICS_PORT). Process-wide by
 * nature, like the process metrics beside them: apps of one process (the tests) add up. Labels are
 * closed sets (operation ids, status classes, causes); never a URL, a workplace or an account,
 * which would make a series per tenant and put names in the monitoring system.
 * docs/operating.md lists every metric.
 */
export const registry = client.register;

let defaultsCollected = false;
/** Node's own metrics (CPU, memory, event loop lag, handles, GC), once per process. */
export function collectProcessMetrics(): void {
  if (defaultsCollected) return;
  defaultsCollected = true;
  client.collectDefaultMetrics({ register: registry });
}

export const httpRequests = new client.Counter({
  name: 'wpa_http_requests_total',
  help: 'Requests answered, by operation (the operationId, or oidc, docs, none) and status class.',
  labelNames: ['operation', 'status_class'] as const,
});

export const httpRequestDuration = new client.Histogram({
  name: 'wpa_http_request_duration_seconds',
  help: 'Time from a request received to its response sent, by operation and status class.',
  labelNames: ['operation', 'status_class'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
});

export const unavailableResponses = new client.Counter({
  name: 'wpa_http_unavailable_total',
  help: "503 responses by cause: the problem's code (DATABASE_UNAVAILABLE, DB_DEADLINE_EXCEEDED, ...).",
  labelNames: ['cause'] as const,
});

export const deadlineStatements = new client.Counter({
  name: 'wpa_db_deadline_statements_total',
  help: 'Statements given up at the deadline: dropped while waiting for a connection (unsent), or cut off unanswered by an unresponsive server (sent).',
  labelNames: ['state'] as const,
});

/** A connection pool as the gauges see it, sampled at each scrape. */
export interface PoolSample {
  max: number;
  /** Statements sent to PostgreSQL and not answered yet: the connections busy with them. */
  active: number;
  /** Statements waiting for a connection. */
  waiting: number;
}

const pools = new Set<() => PoolSample>();

/** Adds a pool to the gauges until the returned function is called (when the pool ends). */
export function registerPool(sample: () => PoolSample): () => void {
  pools.add(sample);
  return () => {
    pools.delete(sample);
  };
}

/** A gauge set, at each scrape, to what `value` gives then. */
function sampledGauge(name: string, help: string, value: () => number): void {
  new client.Gauge({
    name,
    help,
    collect() {
      this.set(value());
    },
  });
}

/** `pick` summed over the registered pools. */
function overPools(pick: (s: PoolSample) => number): () => number {
  return () => {
    let total = 0;
    for (const sample of pools) total += pick(sample());
    return total;
  };
}

sampledGauge(
  'wpa_db_pool_max_connections',
  'Connections the pools may open (DB_POOL_MAX, plus one for maintenance).',
  overPools((s) => s.max),
);
sampledGauge(
  'wpa_db_pool_active_statements',
  'Statements sent and not answered yet: the pool connections in use.',
  overPools((s) => s.active),
);
sampledGauge(
  'wpa_db_pool_waiting_statements',
  'Statements waiting for a pool connection.',
  overPools((s) => s.waiting),
);

export const catalogLookups = new client.Counter({
  name: 'wpa_catalog_cache_lookups_total',
  help: 'Collection catalog lookups: hit (a cached entry used), miss (read from the database), stale (a statement failed on a changed catalog and ran again).',
  labelNames: ['result'] as const,
});

export const ttlDeleted = new client.Counter({
  name: 'wpa_ttl_deleted_documents_total',
  help: 'Documents deleted by TTL passes.',
});

export const ttlPassDuration = new client.Histogram({
  name: 'wpa_ttl_pass_duration_seconds',
  help: 'How long a TTL pass took, failed passes included.',
  buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300],
});

// Weakly held: a registry dropped with its app (tests make many) leaves the sum by itself.
const providerCaches = new Set<WeakRef<{ readonly size: number }>>();

/** Counts `cache.size` in wpa_oidc_providers_cached for as long as the cache lives. */
export function registerProviderCache(cache: { readonly size: number }): void {
  providerCaches.add(new WeakRef(cache));
}

sampledGauge('wpa_oidc_providers_cached', "Workplaces' OpenID Providers held in memory.", () => {
  let total = 0;
  for (const ref of providerCaches) {
    const cache = ref.deref();
    if (cache) total += cache.size;
    else providerCaches.delete(ref);
  }
  return total;
});

export const oidcSignIns = new client.Counter({
  name: 'wpa_oidc_sign_ins_total',
  help: 'Sign-in form submissions by outcome: success, wrong_credentials (a wrong password or an unknown login, alike), locked_out.',
  labelNames: ['outcome'] as const,
});
