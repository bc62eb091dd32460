// The only module with side effects: configuration, database, migrations, listening, shutdown.
import { pino } from 'pino';
import { buildApp } from './app.js';
import { type Config, ConfigError, loadConfig, publicUrlFor } from './config.js';
import { DataDirLockedError } from './db/embedded.js';
import { migrate } from './db/migrate.js';
import { type Database, openDatabase } from './db/open.js';
import type { Sql } from './db/sql.js';
import { Statistics } from './db/statistics.js';
import { findAdminTokenHash, insertAdminToken } from './db/tokens.js';
import { startTtlSweeper } from './db/ttl.js';
import { stdoutLogDestination } from './http/log-destination.js';
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
    stdoutLogDestination(),
  );

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
      const publicUrl = publicUrlFor(config, boundPort);
      return `Listening on ${address}; public URL ${publicUrl}, API docs at ${publicUrl}/docs`;
    },
  });

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
      await app.close();
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

main().catch((err) => {
  process.stderr.write(
    `Failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
