import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { DEFAULT_DB_DEADLINE_MS } from './db/connection/deadline.js';
import { DEFAULT_BODY_LIMIT } from './http/json-body.js';

/** How long one statement of a request may run on PostgreSQL before it is cancelled (503). */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000;

/** More processes than this on one host is a mistake rather than a plan (each holds a pool). */
const MAX_WORKERS = 256;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * Every environment variable the server reads. The descriptions are printed when a variable is
 * wrong, so they say what is expected rather than what the code does with it.
 */
const EnvSchema = Type.Object({
  PORT: Type.Optional(Type.String({ pattern: '^[0-9]{1,5}$', description: 'an integer from 0 to 65535' })),
  HOST: Type.Optional(
    Type.String({ minLength: 1, description: 'an interface address such as 127.0.0.1 or 0.0.0.0' }),
  ),
  PUBLIC_URL: Type.Optional(
    Type.String({ pattern: '^https?://[^/\\s]+(/[^\\s]*)?$', description: 'an absolute http(s) URL' }),
  ),
  DATABASE_URL: Type.Optional(
    Type.String({ pattern: '^postgres(ql)?://', description: 'a postgres:// or postgresql:// URL' }),
  ),
  DATA_DIR: Type.Optional(Type.String({ minLength: 1, description: 'a directory path' })),
  ADMIN_TOKEN: Type.Optional(
    Type.String({
      minLength: 32,
      maxLength: 512,
      pattern: '^[\\x21-\\x7E]+$',
      description: 'at least 32 printable ASCII characters without spaces',
    }),
  ),
  LOG_LEVEL: Type.Optional(
    Type.Union(
      LOG_LEVELS.map((l) => Type.Literal(l)),
      { description: `one of ${LOG_LEVELS.join(', ')}` },
    ),
  ),
  DB_POOL_MAX: Type.Optional(Type.String({ pattern: '^[0-9]+$', description: 'an integer from 1 to 100' })),
  BODY_LIMIT: Type.Optional(
    Type.String({ pattern: '^[0-9]+$', description: 'a number of bytes from 1024 to 268435456' }),
  ),
  STATEMENT_TIMEOUT_MS: Type.Optional(
    Type.String({ pattern: '^[0-9]+$', description: 'milliseconds: 0 (no limit) or from 100 to 3600000' }),
  ),
  DB_PREPARE: Type.Optional(
    Type.Union([Type.Literal('true'), Type.Literal('false')], { description: 'true or false' }),
  ),
  DB_DEADLINE_MS: Type.Optional(
    Type.String({ pattern: '^[0-9]+$', description: 'milliseconds from 100 to 600000' }),
  ),
  TTL_INTERVAL_SECONDS: Type.Optional(
    Type.String({ pattern: '^[0-9]+$', description: 'seconds from 1 to 86400' }),
  ),
  WORKERS: Type.Optional(
    Type.String({
      pattern: '^(auto|[0-9]+)$',
      description: `auto (one per core) or an integer from 1 to ${MAX_WORKERS}`,
    }),
  ),
  METRICS_PORT: Type.Optional(
    Type.String({ pattern: '^[0-9]{1,5}$', description: 'an integer from 1 to 65535' }),
  ),
  TRUST_PROXY: Type.Optional(
    Type.String({
      minLength: 1,
      description: 'true, false, or a comma-separated list of proxy addresses (IPs or CIDR ranges)',
    }),
  ),
});
type Env = Static<typeof EnvSchema>;

/** The names of every environment variable the server reads. */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(EnvSchema.properties);

export interface Config {
  readonly port: number;
  readonly host: string;
  /** PUBLIC_URL, or derived from HOST and PORT. With PORT=0 use `publicUrlFor` once the port is known. */
  readonly publicUrl: string;
  readonly publicUrlConfigured: boolean;
  /** Unset: the embedded PGlite database in `dataDir`. */
  readonly databaseUrl: string | undefined;
  readonly dataDir: string;
  readonly adminToken: string | undefined;
  readonly logLevel: (typeof LOG_LEVELS)[number];
  readonly dbPoolMax: number;
  /**
   * Whether statements are prepared on PostgreSQL connections (db/storage/statement-texts.ts). false for a
   * connection pooler in transaction mode that cannot hold prepared statements.
   */
  readonly dbPrepare: boolean;
  readonly bodyLimit: number;
  /** PostgreSQL's statement_timeout for requests' statements; 0 for none. */
  readonly statementTimeoutMs: number;
  /** PostgreSQL only: the client-side deadline of every statement (see db/connection/deadline.ts). */
  readonly dbDeadlineMs: number;
  /**
   * Which peers' X-Forwarded-For names the client in the request log: none (false), any (true),
   * or these addresses. URLs never come from forwarded headers: they come from PUBLIC_URL.
   */
  readonly trustProxy: boolean | string[];
  /** How often the TTL sweeper looks for expired documents (db/storage/ttl.ts); MongoDB's is 60 s. */
  readonly ttlIntervalSeconds: number;
  /**
   * How many processes serve requests: 1 is the server itself; more are node:cluster workers
   * sharing the port (PostgreSQL only). WORKERS=auto is resolved here, to the cores available.
   */
  readonly workers: number;
  /** Where GET /metrics is served (Prometheus), on HOST, without authentication; none when unset. */
  readonly metricsPort: number | undefined;
}

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

function intInRange(
  problems: string[],
  name: string,
  raw: string | undefined,
  def: number,
  min: number,
  max: number,
) {
  if (raw === undefined) return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    problems.push(`${name}=${JSON.stringify(raw)}: must be an integer from ${min} to ${max}`);
    return def;
  }
  return n;
}

/** Reads the configuration from `env`, reporting every bad variable at once. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  // Empty strings are how shells unset variables in .env files; treat them as unset.
  const relevant: Record<string, string> = {};
  for (const key of CONFIG_VARIABLES) {
    const v = env[key];
    if (v !== undefined && v !== '') relevant[key] = v;
  }

  // One line per variable: the first rule it breaks is the one worth fixing first.
  const problems: string[] = [];
  const bad = new Set<string>();
  for (const err of Value.Errors(EnvSchema, relevant)) {
    const name = err.path.replace(/^\//, '');
    if (bad.has(name)) continue;
    bad.add(name);
    const hint = (err.schema as { description?: string }).description;
    const shown = name === 'ADMIN_TOKEN' ? '(hidden)' : JSON.stringify(err.value);
    problems.push(`${name}=${shown}: ${hint ? `must be ${hint}` : err.message}`);
  }
  // The well-formed variables are still checked further, so that every problem is reported at once.
  const e = Object.fromEntries(Object.entries(relevant).filter(([k]) => !bad.has(k))) as Env;

  const port = intInRange(problems, 'PORT', e.PORT, 3000, 0, 65535);
  const dbPoolMax = intInRange(problems, 'DB_POOL_MAX', e.DB_POOL_MAX, 10, 1, 100);
  const bodyLimit = intInRange(
    problems,
    'BODY_LIMIT',
    e.BODY_LIMIT,
    DEFAULT_BODY_LIMIT,
    1024,
    256 * 1024 * 1024,
  );

  // 0 turns the timeout off; any other value must be in range.
  const statementTimeoutMs =
    e.STATEMENT_TIMEOUT_MS !== undefined && Number(e.STATEMENT_TIMEOUT_MS) === 0
      ? 0
      : intInRange(
          problems,
          'STATEMENT_TIMEOUT_MS',
          e.STATEMENT_TIMEOUT_MS,
          DEFAULT_STATEMENT_TIMEOUT_MS,
          100,
          3_600_000,
        );

  const dbDeadlineMs = intInRange(
    problems,
    'DB_DEADLINE_MS',
    e.DB_DEADLINE_MS,
    DEFAULT_DB_DEADLINE_MS,
    100,
    600_000,
  );

  const metricsPort =
    e.METRICS_PORT === undefined
      ? undefined
      : intInRange(problems, 'METRICS_PORT', e.METRICS_PORT, 0, 1, 65535);
  if (metricsPort !== undefined && metricsPort === port)
    problems.push(
      `METRICS_PORT=${JSON.stringify(e.METRICS_PORT)}: must differ from PORT, which serves the API`,
    );

  const trustProxy = parseTrustProxy(problems, e.TRUST_PROXY);
  const ttlIntervalSeconds = intInRange(
    problems,
    'TTL_INTERVAL_SECONDS',
    e.TTL_INTERVAL_SECONDS,
    60,
    1,
    86_400,
  );

  const workers =
    e.WORKERS === 'auto'
      ? availableParallelism()
      : intInRange(problems, 'WORKERS', e.WORKERS, 1, 1, MAX_WORKERS);
  // PGlite is one process holding its data directory's lock: a second process cannot open it.
  if (workers > 1 && !relevant.DATABASE_URL) {
    const shown = e.WORKERS === 'auto' ? `auto (${workers} cores)` : String(workers);
    problems.push(
      `WORKERS=${shown}: more than one process needs DATABASE_URL (PostgreSQL); the embedded database is opened by one process only`,
    );
  }

  if (relevant.DATABASE_URL && !relevant.ADMIN_TOKEN) {
    problems.push(
      'ADMIN_TOKEN: is required when DATABASE_URL is set (only the embedded database generates one)',
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);

  const host = e.HOST ?? '127.0.0.1';
  return Object.freeze({
    port,
    host,
    publicUrl: e.PUBLIC_URL ? e.PUBLIC_URL.replace(/\/+$/, '') : defaultPublicUrl(host, port),
    publicUrlConfigured: e.PUBLIC_URL !== undefined,
    databaseUrl: e.DATABASE_URL,
    dataDir: e.DATA_DIR ?? './data',
    adminToken: e.ADMIN_TOKEN,
    logLevel: e.LOG_LEVEL ?? 'info',
    dbPoolMax,
    dbPrepare: e.DB_PREPARE !== 'false',
    bodyLimit,
    statementTimeoutMs,
    dbDeadlineMs,
    trustProxy,
    ttlIntervalSeconds,
    workers,
    metricsPort,
  });
}

function parseTrustProxy(problems: string[], raw: string | undefined): boolean | string[] {
  if (raw === undefined || raw === 'false') return false;
  if (raw === 'true') return true;
  const entries = raw.split(',').map((s) => s.trim());
  const bad = entries.filter((entry) => {
    const [address = '', bits, ...rest] = entry.split('/');
    const family = isIP(address);
    if (family === 0 || rest.length > 0) return true;
    if (bits === undefined) return false;
    const n = Number(bits);
    return !/^\d{1,3}$/.test(bits) || n > (family === 4 ? 32 : 128);
  });
  if (bad.length > 0) {
    problems.push(
      `TRUST_PROXY=${JSON.stringify(raw)}: must be true, false, or a comma-separated list of IP addresses or CIDR ranges (not ${bad.map((b) => JSON.stringify(b)).join(', ')})`,
    );
    return false;
  }
  return entries;
}

function defaultPublicUrl(host: string, port: number): string {
  return httpUrl(host === '0.0.0.0' || host === '::' ? 'localhost' : host, port);
}

/** `http://host:port`, an IPv6 address in brackets. */
export function httpUrl(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** The public URL once the server listens: PUBLIC_URL if set, else derived from the port actually bound. */
export function publicUrlFor(config: Config, boundPort: number): string {
  return config.publicUrlConfigured ? config.publicUrl : defaultPublicUrl(config.host, boundPort);
}
