// The only module with side effects: configuration, database, migrations, listening, shutdown,
// and with WORKERS > 1 the node:cluster primary that runs the workers.
import cluster from 'node:cluster';
import { type Logger, pino } from 'pino';
import { AggregatorRegistry } from 'prom-client';
import { buildApp } from './app.js';
import { type Config, ConfigError, httpUrl, loadConfig, publicUrlFor } from './config.js';
import { connectionBudget, readConnectionLimits } from './db/connection/connection-budget.js';
import { DataDirLockedError } from './db/connection/embedded.js';
import { migrate } from './db/connection/migrate.js';
import { type Database, openDatabase } from './db/connection/open.js';
import type { Sql } from './db/connection/sql.js';
import { findAdminTokenHash, insertAdminToken } from './db/platform/tokens.js';
import { Statistics } from './db/storage/statistics.js';
import { startTtlSweeper } from './db/storage/ttl.js';
import { stdoutLogDestination } from './http/log-destination.js';
import { type MetricsServer, startMetricsServer } from './http/metrics-server.js';
import { collectProcessMetrics, registry } from './metrics.js';
import { generateSecret, hashSecret, TOKEN_PREFIX } from './secrets.js';

/** How long in-flight requests get to finish after SIGTERM before the process gives up. */
const SHUTDOWN_GRACE_MS = 10_000;

/**
 * The admin token: ADMIN_TOKEN when set. Otherwise (embedded database only, enforced by config)
 * the one generated at first start, whose hash is stored; a new one is printed exactly once.
 */
async function resolveAdminToken(sql: Sql, config: Config): Promise<{ hash: Buffer; generated?: string }> {
  if (config.adminToken) return { hash: hashSecret(config.adminToken) };
  const stored = await findAdminTokenHash(sql);
  if (stored) return { hash: stored };
  const token = generateSecret(TOKEN_PREFIX.admin);
  const hash = hashSecret(token);
  await insertAdminToken(sql, TOKEN_PREFIX.admin, hash, 'generated at first start');
  return { hash, generated: token };
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const log = pino(
    {
      level: config.logLevel,
      redact: ['req.headers["x-auth-token"]', 'req.headers.authorization', 'req.headers.authorizarion'],
    },
    // Workers share the primary's stdout: each write must stay whole between the others' lines.
    stdoutLogDestination(1, cluster.isWorker),
  );
  // How this process runs: `npm start` runs the compiled server with plain node, no loader.
  if (!cluster.isWorker)
    log.info({ node: process.version, execArgv: process.execArgv, main: process.argv[1] }, 'starting');

  if (config.metricsPort !== undefined) {
    collectProcessMetrics();
    // A worker answers the primary's requests for its figures (prom-client's cluster aggregation).
    if (cluster.isWorker) new AggregatorRegistry();
  }

  if (cluster.isWorker) {
    // The primary checked the budget and migrated; ADMIN_TOKEN is set (PostgreSQL requires it).
    const db = await openDatabase(config);
    await serve(config, log, db, await resolveAdminToken(db.sql, config));
    return;
  }

  let db: Database;
  try {
    db = await openDatabase(config, log);
  } catch (err) {
    if (err instanceof DataDirLockedError) {
      log.fatal(err.message);
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  if (db.kind === 'postgres') {
    const budget = connectionBudget(await readConnectionLimits(db.sql), config.workers, config.dbPoolMax);
    if (budget.verdict === 'refuse') {
      log.fatal(budget.message);
      process.stderr.write(`${budget.message}\n`);
      await db.close();
      process.exit(1);
    }
    log[budget.verdict === 'warn' ? 'warn' : 'info'](budget.message);
  }
  const applied = await migrate(db.sql);
  if (applied.length > 0) log.info({ migrations: applied }, `applied ${applied.length} migration(s)`);

  const admin = await resolveAdminToken(db.sql, config);
  if (admin.generated) {
    // Printed outside the structured log on purpose: it is shown once and never logged again.
    process.stdout.write(
      `\nAdmin token (shown only now; store it safely, only its hash is kept):\n\n    ${admin.generated}\n\n` +
        `Use it as the X-Auth-Token header. Set ADMIN_TOKEN to replace it.\n\n`,
    );
  }

  if (config.workers === 1) {
    await serve(config, log, db, admin);
    return;
  }
  // The primary serves nothing but the workers' metrics, and holds no connection while they run.
  await db.close();
  await superviseWorkers(config, log);
}

/** Builds the app on `db`, listens, and shuts down gracefully on SIGTERM or SIGINT. */
async function serve(config: Config, log: Logger, db: Database, admin: { hash: Buffer }): Promise<void> {
  // The bound port is known only after listen (PORT=0), and the issuer needs it: resolve lazily.
  let boundPort = config.port;
  const app = await buildApp({
    sql: db.sql,
    adminTokenHash: admin.hash,
    bodyLimit: config.bodyLimit,
    logger: log,
    issuerBase: () => publicUrlFor(config, boundPort),
    trustProxy: config.trustProxy,
  });
  await app.listen({
    port: config.port,
    host: config.host,
    listenTextResolver: (address) => {
      boundPort = Number(new URL(address).port);
      // A worker's own line; the primary prints the one "Listening on" line once all workers listen.
      if (cluster.isWorker) return `worker ready at ${address}`;
      return listeningLine(config, address);
    },
  });

  const metrics = cluster.isWorker ? undefined : await serveMetrics(config, log, () => registry.metrics());

  const ttl = startTtlSweeper(
    db.sql,
    log,
    config.ttlIntervalSeconds * 1000,
    new Statistics(db.sql, (err) => log.warn({ err }, 'VACUUM after a TTL pass failed')),
  );

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal} received; finishing in-flight requests`);
    const force = setTimeout(() => {
      log.error(`shutdown took longer than ${SHUTDOWN_GRACE_MS} ms; exiting`);
      process.exit(1);
    }, SHUTDOWN_GRACE_MS);
    force.unref();
    try {
      await ttl.stop();
      await metrics?.close();
      // Closing stops new connections and closes the idle ones once; a kept-alive connection whose
      // response ends later would stay open for its keep-alive timeout, and the close with it:
      // each is closed as soon as it is idle (a client then reconnects elsewhere).
      const closing = app.close();
      const reaper = setInterval(() => app.server.closeIdleConnections(), 50);
      try {
        await closing;
      } finally {
        clearInterval(reaper);
      }
      await db.close();
      log.info('shut down cleanly');
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

function listeningLine(config: Config, address: string, workers?: number): string {
  const publicUrl = publicUrlFor(config, Number(new URL(address).port));
  const by = workers === undefined ? '' : ` with ${workers} workers`;
  // performance.now() counts from the process's start: the start-up time includes loading the code.
  return `Listening on ${address}; public URL ${publicUrl}, API docs at ${publicUrl}/docs (started in ${Math.round(performance.now())} ms${by})`;
}

/** The metrics port, when METRICS_PORT is set: `metrics` gives the text of a scrape. */
async function serveMetrics(
  config: Config,
  log: Logger,
  metrics: () => Promise<string>,
): Promise<MetricsServer | undefined> {
  if (config.metricsPort === undefined) return undefined;
  const server = await startMetricsServer({
    host: config.host,
    port: config.metricsPort,
    contentType: registry.contentType,
    metrics,
    onError: (err) => log.warn({ err }, 'a metrics scrape failed'),
  });
  log.info(`Metrics on ${httpUrl(config.host, server.port)}/metrics`);
  return server;
}

/** A worker that dies within this long of its start counts as a crash loop: its restart waits longer. */
const CRASH_WINDOW_MS = 10_000;
const RESTART_DELAY_MAX_MS = 30_000;

/**
 * The primary of WORKERS > 1: forks the workers, which share the port (node:cluster hands the
 * primary's connections to them round-robin), replaces a worker that dies, and on SIGTERM or
 * SIGINT stops them all, each with its own graceful shutdown.
 */
async function superviseWorkers(config: Config, log: Logger): Promise<void> {
  const listening = new Set<number>();
  let started = false;
  let stopping = false;
  let clean = true;
  let crashes = 0;
  const startedAt = new Map<number, number>();
  const restarts = new Set<NodeJS.Timeout>();
  const fork = () => {
    const worker = cluster.fork();
    startedAt.set(worker.id, Date.now());
    log.info({ worker: worker.process.pid }, `worker ${worker.process.pid} started`);
  };

  cluster.on('listening', (worker, address) => {
    if (listening.has(worker.id)) return; // one line per worker, even listening on two addresses
    listening.add(worker.id);
    if (started) {
      log.info({ worker: worker.process.pid }, `worker ${worker.process.pid} replaced the one that died`);
      return;
    }
    if (listening.size === config.workers) {
      started = true;
      log.info(listeningLine(config, httpUrl(address.address, address.port), config.workers));
    }
  });

  cluster.on('exit', (worker, code, signal) => {
    const wasListening = listening.delete(worker.id);
    const pid = worker.process.pid;
    const how = signal ? `signal ${signal}` : `code ${code}`;
    if (stopping) {
      // A worker still starting has no signal handler yet, and nothing in flight either.
      if (code !== 0 && !(signal === 'SIGTERM' && !wasListening)) {
        clean = false;
        log.warn({ worker: pid }, `worker ${pid} stopped with ${how}`);
      }
      if (Object.keys(cluster.workers ?? {}).length > 0) return;
      if (clean) log.info('all workers shut down cleanly');
      process.exit(clean ? 0 : 1);
    }
    if (!started) {
      // A worker that cannot start (its error is on stderr) would fail the same way again.
      log.fatal({ worker: pid }, `worker ${pid} exited with ${how} before listening; stopping`);
      stopping = true;
      clean = false;
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(1);
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGKILL');
      return;
    }
    const lived = Date.now() - (startedAt.get(worker.id) ?? 0);
    startedAt.delete(worker.id);
    crashes = lived < CRASH_WINDOW_MS ? crashes + 1 : 0;
    const delay = crashes === 0 ? 0 : Math.min(100 * 2 ** crashes, RESTART_DELAY_MAX_MS);
    log.error({ worker: pid }, `worker ${pid} exited with ${how}; starting another in ${delay} ms`);
    const timer = setTimeout(() => {
      restarts.delete(timer);
      fork();
    }, delay);
    restarts.add(timer);
  });

  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    for (const timer of restarts) clearTimeout(timer);
    const running = Object.values(cluster.workers ?? {});
    log.info(`${signal} received; stopping ${running.length} workers`);
    // Between a worker's death and its replacement there may be none left to wait for.
    if (running.length === 0) process.exit(0);
    for (const w of running) w?.process.kill('SIGTERM');
    // Each worker gives up after SHUTDOWN_GRACE_MS on its own; this only ends a worker that hangs.
    setTimeout(() => {
      log.error(`workers still running ${SHUTDOWN_GRACE_MS + 5_000} ms after ${signal}; killing them`);
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGKILL');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS + 5_000).unref();
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));

  for (let i = 0; i < config.workers; i++) fork();

  // Every worker's figures added up, asked of each over node:cluster's channel at each scrape.
  const aggregator = new AggregatorRegistry();
  await serveMetrics(config, log, () => aggregator.clusterMetrics());
}

main().catch((err) => {
  process.stderr.write(
    `Failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
