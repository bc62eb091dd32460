import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { type Config, ConfigError, loadConfig, publicUrlFor } from '../../config.js';

/** A valid admin token: 48 URL-safe characters. */
const TOKEN = 'wpa_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH';

function configError(env: Record<string, string | undefined>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

/** The variables a problem list names, in order: "PORT=..." and "ADMIN_TOKEN: ..." both count. */
function named(problems: string[]): string[] {
  return problems.map((p) => /^([A-Z_]+)[=:]/.exec(p)?.[1] ?? p);
}

describe('loadConfig', () => {
  it('has defaults for everything', () => {
    expect(loadConfig({})).toEqual({
      port: 3000,
      host: '127.0.0.1',
      publicUrl: 'http://127.0.0.1:3000',
      publicUrlConfigured: false,
      databaseUrl: undefined,
      dataDir: './data',
      adminToken: undefined,
      logLevel: 'info',
      dbPoolMax: 10,
      dbPrepare: true,
      bodyLimit: 16 * 1024 * 1024,
      statementTimeoutMs: 30_000,
      dbDeadlineMs: 5_000,
      trustProxy: false,
      ttlIntervalSeconds: 60,
      workers: 1,
      metricsPort: undefined,
    } satisfies Config);
  });

  it('returns a frozen object', () => {
    expect(Object.isFrozen(loadConfig({}))).toBe(true);
  });

  it('ignores variables it does not read', () => {
    expect(loadConfig({ PATH: '/bin', NODE_ENV: 'production', port: 'abc' })).toEqual(loadConfig({}));
  });

  it.each<[string, Record<string, string>, Partial<Config>]>([
    ['PORT', { PORT: '8080' }, { port: 8080, publicUrl: 'http://127.0.0.1:8080' }],
    ['PORT=0 (any free port)', { PORT: '0' }, { port: 0 }],
    ['PORT max', { PORT: '65535' }, { port: 65535 }],
    ['PORT with leading zeros', { PORT: '08080' }, { port: 8080 }],
    ['HOST', { HOST: '10.1.2.3' }, { host: '10.1.2.3', publicUrl: 'http://10.1.2.3:3000' }],
    ['HOST=0.0.0.0', { HOST: '0.0.0.0' }, { host: '0.0.0.0', publicUrl: 'http://localhost:3000' }],
    ['HOST=::', { HOST: '::' }, { host: '::', publicUrl: 'http://localhost:3000' }],
    ['HOST=::1', { HOST: '::1' }, { host: '::1', publicUrl: 'http://[::1]:3000' }],
    ['HOST and PORT', { HOST: '0.0.0.0', PORT: '80' }, { publicUrl: 'http://localhost:80' }],
    ['PUBLIC_URL', { PUBLIC_URL: 'https://api.example.com' }, { publicUrl: 'https://api.example.com' }],
    ['PUBLIC_URL with port', { PUBLIC_URL: 'http://h:8080' }, { publicUrl: 'http://h:8080' }],
    ['PUBLIC_URL trailing slash', { PUBLIC_URL: 'https://x.example/' }, { publicUrl: 'https://x.example' }],
    [
      'PUBLIC_URL path with trailing slashes',
      { PUBLIC_URL: 'https://x.example/api//' },
      { publicUrl: 'https://x.example/api' },
    ],
    [
      'PUBLIC_URL wins over HOST and PORT',
      { PUBLIC_URL: 'https://x.example', HOST: '0.0.0.0', PORT: '80' },
      { publicUrl: 'https://x.example', host: '0.0.0.0', port: 80 },
    ],
    [
      'DATABASE_URL postgres://',
      { DATABASE_URL: 'postgres://u:p@db:5432/app', ADMIN_TOKEN: TOKEN },
      { databaseUrl: 'postgres://u:p@db:5432/app', adminToken: TOKEN },
    ],
    [
      'DATABASE_URL postgresql://',
      { DATABASE_URL: 'postgresql://db/app', ADMIN_TOKEN: TOKEN },
      { databaseUrl: 'postgresql://db/app' },
    ],
    ['DATA_DIR', { DATA_DIR: '/var/lib/wp' }, { dataDir: '/var/lib/wp' }],
    ['DATA_DIR relative', { DATA_DIR: 'some dir' }, { dataDir: 'some dir' }],
    ['ADMIN_TOKEN without DATABASE_URL', { ADMIN_TOKEN: TOKEN }, { adminToken: TOKEN }],
    ['ADMIN_TOKEN of 32 characters', { ADMIN_TOKEN: 'x'.repeat(32) }, { adminToken: 'x'.repeat(32) }],
    ['ADMIN_TOKEN of 512 characters', { ADMIN_TOKEN: '~'.repeat(512) }, { adminToken: '~'.repeat(512) }],
    ...(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const).map(
      (level): [string, Record<string, string>, Partial<Config>] => [
        `LOG_LEVEL=${level}`,
        { LOG_LEVEL: level },
        { logLevel: level },
      ],
    ),
    ['DB_POOL_MAX', { DB_POOL_MAX: '25' }, { dbPoolMax: 25 }],
    ['DB_PREPARE false', { DB_PREPARE: 'false' }, { dbPrepare: false }],
    ['DB_PREPARE true', { DB_PREPARE: 'true' }, { dbPrepare: true }],
    ['DB_POOL_MAX min', { DB_POOL_MAX: '1' }, { dbPoolMax: 1 }],
    ['DB_POOL_MAX max', { DB_POOL_MAX: '100' }, { dbPoolMax: 100 }],
    ['BODY_LIMIT', { BODY_LIMIT: '1048576' }, { bodyLimit: 1048576 }],
    ['BODY_LIMIT min', { BODY_LIMIT: '1024' }, { bodyLimit: 1024 }],
    ['BODY_LIMIT max', { BODY_LIMIT: String(256 * 1024 * 1024) }, { bodyLimit: 256 * 1024 * 1024 }],
    ['STATEMENT_TIMEOUT_MS', { STATEMENT_TIMEOUT_MS: '5000' }, { statementTimeoutMs: 5000 }],
    ['STATEMENT_TIMEOUT_MS off', { STATEMENT_TIMEOUT_MS: '0' }, { statementTimeoutMs: 0 }],
    ['STATEMENT_TIMEOUT_MS min', { STATEMENT_TIMEOUT_MS: '100' }, { statementTimeoutMs: 100 }],
    ['STATEMENT_TIMEOUT_MS max', { STATEMENT_TIMEOUT_MS: '3600000' }, { statementTimeoutMs: 3_600_000 }],
    ['DB_DEADLINE_MS', { DB_DEADLINE_MS: '2000' }, { dbDeadlineMs: 2000 }],
    ['DB_DEADLINE_MS min', { DB_DEADLINE_MS: '100' }, { dbDeadlineMs: 100 }],
    ['DB_DEADLINE_MS max', { DB_DEADLINE_MS: '600000' }, { dbDeadlineMs: 600_000 }],
    ['TTL_INTERVAL_SECONDS', { TTL_INTERVAL_SECONDS: '1' }, { ttlIntervalSeconds: 1 }],
    ['TTL_INTERVAL_SECONDS max', { TTL_INTERVAL_SECONDS: '86400' }, { ttlIntervalSeconds: 86_400 }],
    ['WORKERS=1 on the embedded database', { WORKERS: '1' }, { workers: 1 }],
    [
      'WORKERS on PostgreSQL',
      { WORKERS: '4', DATABASE_URL: 'postgres://db/app', ADMIN_TOKEN: TOKEN },
      { workers: 4 },
    ],
    [
      'WORKERS max',
      { WORKERS: '256', DATABASE_URL: 'postgres://db/app', ADMIN_TOKEN: TOKEN },
      { workers: 256 },
    ],
    [
      'WORKERS=auto',
      { WORKERS: 'auto', DATABASE_URL: 'postgres://db/app', ADMIN_TOKEN: TOKEN },
      { workers: availableParallelism() },
    ],
    ['METRICS_PORT', { METRICS_PORT: '9464' }, { metricsPort: 9464 }],
    ['METRICS_PORT max', { METRICS_PORT: '65535' }, { metricsPort: 65535 }],
    ['TRUST_PROXY=true', { TRUST_PROXY: 'true' }, { trustProxy: true }],
    ['TRUST_PROXY=false', { TRUST_PROXY: 'false' }, { trustProxy: false }],
    ['TRUST_PROXY one address', { TRUST_PROXY: '10.0.0.5' }, { trustProxy: ['10.0.0.5'] }],
    [
      'TRUST_PROXY addresses and ranges',
      { TRUST_PROXY: '127.0.0.1, 10.0.0.0/8,::1,fd00::/8' },
      { trustProxy: ['127.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8'] },
    ],
  ])('accepts %s', (_label, env, expected) => {
    expect(loadConfig(env)).toMatchObject(expected);
  });

  it.each<[string, string]>([
    ['METRICS_PORT', '0'],
    ['METRICS_PORT', '65536'],
    ['METRICS_PORT', 'x'],
    ['METRICS_PORT', '3000'],
    ['PORT', 'abc'],
    ['PORT', '-1'],
    ['PORT', '65536'],
    ['PORT', '99999'],
    ['PORT', '123456'],
    ['PORT', '80.5'],
    ['PORT', ' 80'],
    ['PORT', '1e3'],
    ['TRUST_PROXY', 'yes'],
    ['TRUST_PROXY', '1'],
    ['TRUST_PROXY', '10.0.0.0/33'],
    ['TRUST_PROXY', '10.0.0.1,proxy.example'],
    ['TRUST_PROXY', '::1/129'],
    ['TRUST_PROXY', '10.0.0.0/8/8'],
    ['PUBLIC_URL', 'api.example.com'],
    ['PUBLIC_URL', 'ftp://x.example'],
    ['PUBLIC_URL', 'http://'],
    ['PUBLIC_URL', 'http:///path'],
    ['PUBLIC_URL', 'https://x.example/a b'],
    ['DATABASE_URL', 'mysql://x'],
    ['DATABASE_URL', 'localhost:5432'],
    ['DATABASE_URL', 'POSTGRES://x'],
    ['LOG_LEVEL', 'loud'],
    ['LOG_LEVEL', 'INFO'],
    ['LOG_LEVEL', 'warning'],
    ['DB_POOL_MAX', '0'],
    ['DB_PREPARE', 'no'],
    ['DB_PREPARE', '0'],
    ['DB_POOL_MAX', '101'],
    ['DB_POOL_MAX', 'ten'],
    ['DB_POOL_MAX', '-5'],
    ['DB_POOL_MAX', '2.5'],
    ['BODY_LIMIT', '1023'],
    ['BODY_LIMIT', String(256 * 1024 * 1024 + 1)],
    ['BODY_LIMIT', '16MiB'],
    ['BODY_LIMIT', '99999999999999999999'],
    ['STATEMENT_TIMEOUT_MS', '99'],
    ['TTL_INTERVAL_SECONDS', '0'],
    ['TTL_INTERVAL_SECONDS', '86401'],
    ['TTL_INTERVAL_SECONDS', '1m'],
    ['STATEMENT_TIMEOUT_MS', '3600001'],
    ['STATEMENT_TIMEOUT_MS', '30s'],
    ['STATEMENT_TIMEOUT_MS', '-1'],
    ['DB_DEADLINE_MS', '0'],
    ['DB_DEADLINE_MS', '99'],
    ['DB_DEADLINE_MS', '600001'],
    ['DB_DEADLINE_MS', '5s'],
    ['WORKERS', '0'],
    ['WORKERS', '257'],
    ['WORKERS', 'all'],
    ['WORKERS', 'AUTO'],
    ['WORKERS', '-1'],
    ['WORKERS', '1.5'],
  ])('rejects %s=%j, naming the variable', (name, value) => {
    const env: Record<string, string> = { [name]: value };
    // DATABASE_URL needs ADMIN_TOKEN; give it one so that DATABASE_URL itself is the only problem.
    if (name === 'DATABASE_URL') env.ADMIN_TOKEN = TOKEN;
    // WORKERS > 1 needs DATABASE_URL: give it one, so that the value itself is the problem.
    if (name === 'WORKERS') Object.assign(env, { DATABASE_URL: 'postgres://db/app', ADMIN_TOKEN: TOKEN });
    const err = configError(env);
    expect(named(err.problems)).toEqual([name]);
    expect(err.problems[0]).toContain(JSON.stringify(value));
    expect(err.message).toContain('Invalid configuration');
    expect(err.message).toContain(err.problems[0]);
  });

  it.each([
    ['too short', 'x'.repeat(31)],
    ['too long', 'x'.repeat(513)],
    ['with a space', `${'x'.repeat(20)} ${'y'.repeat(20)}`],
    ['with a control character', `${'x'.repeat(40)}\n`],
    ['non-ASCII', `${'x'.repeat(40)}é`],
  ])('rejects an ADMIN_TOKEN %s without showing its value', (_label, value) => {
    const err = configError({ ADMIN_TOKEN: value });
    expect(new Set(named(err.problems))).toEqual(new Set(['ADMIN_TOKEN']));
    expect(err.message).toContain('ADMIN_TOKEN');
    expect(err.message).not.toContain(value);
    expect(err.message).not.toContain(value.slice(0, 20));
    expect(err.problems.join('\n')).not.toContain(value.slice(0, 20));
  });

  it('does not show a bad ADMIN_TOKEN next to other problems either', () => {
    const secret = 'shortButSecret123';
    const err = configError({ ADMIN_TOKEN: secret, DATABASE_URL: 'postgres://db/app', PORT: 'x' });
    expect(new Set(named(err.problems))).toEqual(new Set(['ADMIN_TOKEN', 'PORT']));
    expect(err.message).not.toContain(secret);
  });

  it('refuses more than one worker on the embedded database, saying why', () => {
    const err = configError({ WORKERS: '2' });
    expect(err.problems).toEqual([
      'WORKERS=2: more than one process needs DATABASE_URL (PostgreSQL); the embedded database is opened by one process only',
    ]);
    // auto means more than one wherever there is more than one core, and says what it came to.
    if (availableParallelism() > 1) {
      expect(configError({ WORKERS: 'auto' }).problems[0]).toMatch(
        new RegExp(
          `^WORKERS=auto \\(${availableParallelism()} cores\\): more than one process needs DATABASE_URL`,
        ),
      );
    }
  });

  it('requires ADMIN_TOKEN when DATABASE_URL is set', () => {
    const err = configError({ DATABASE_URL: 'postgres://db/app' });
    expect(err.problems).toHaveLength(1);
    expect(err.problems[0]).toMatch(/^ADMIN_TOKEN: is required when DATABASE_URL is set/);
    // An empty ADMIN_TOKEN is no ADMIN_TOKEN.
    expect(configError({ DATABASE_URL: 'postgres://db/app', ADMIN_TOKEN: '' }).problems).toEqual(
      err.problems,
    );
  });

  it.each<[string, Record<string, string>, string[]]>([
    [
      'three pattern errors and the missing ADMIN_TOKEN',
      { PORT: 'abc', LOG_LEVEL: 'loud', DATABASE_URL: 'mysql://x' },
      ['PORT', 'LOG_LEVEL', 'DATABASE_URL', 'ADMIN_TOKEN'],
    ],
    [
      'three range errors',
      { PORT: '99999', DB_POOL_MAX: '0', BODY_LIMIT: '5' },
      ['PORT', 'DB_POOL_MAX', 'BODY_LIMIT'],
    ],
    // A value of the right shape but out of range, next to a value of the wrong shape.
    ['a range error and a pattern error', { PORT: '99999', LOG_LEVEL: 'loud' }, ['PORT', 'LOG_LEVEL']],
    [
      'every variable wrong',
      {
        PORT: '70000',
        HOST: 'h',
        PUBLIC_URL: 'nope',
        DATABASE_URL: 'mysql://x',
        DATA_DIR: '/d',
        ADMIN_TOKEN: 'short',
        LOG_LEVEL: 'loud',
        DB_POOL_MAX: '1000',
        BODY_LIMIT: '1',
        STATEMENT_TIMEOUT_MS: '1',
        DB_DEADLINE_MS: '1',
      },
      [
        'PORT',
        'PUBLIC_URL',
        'DATABASE_URL',
        'ADMIN_TOKEN',
        'LOG_LEVEL',
        'DB_POOL_MAX',
        'BODY_LIMIT',
        'STATEMENT_TIMEOUT_MS',
        'DB_DEADLINE_MS',
      ],
    ],
  ])('reports every bad variable at once: %s', (_label, env, expected) => {
    const err = configError(env);
    expect(new Set(named(err.problems))).toEqual(new Set(expected));
    for (const name of expected) expect(err.message).toContain(`  - ${name}`);
  });

  it('treats empty strings as unset', () => {
    const empty = {
      PORT: '',
      HOST: '',
      PUBLIC_URL: '',
      DATABASE_URL: '',
      DATA_DIR: '',
      ADMIN_TOKEN: '',
      LOG_LEVEL: '',
      DB_POOL_MAX: '',
      BODY_LIMIT: '',
    };
    expect(loadConfig(empty)).toEqual(loadConfig({}));
    expect(loadConfig({ ...empty, PORT: '4000' })).toMatchObject({ port: 4000, host: '127.0.0.1' });
  });

  it('treats undefined values as unset', () => {
    expect(loadConfig({ PORT: undefined, DATABASE_URL: undefined })).toEqual(loadConfig({}));
  });

  it('gives ConfigError a readable message with one line per problem', () => {
    const err = configError({ PORT: 'abc', LOG_LEVEL: 'loud' });
    expect(err.name).toBe('ConfigError');
    expect(err).toBeInstanceOf(Error);
    expect(err.message.split('\n')).toEqual([
      'Invalid configuration:',
      ...err.problems.map((p) => `  - ${p}`),
    ]);
    expect(err.message).toContain('PORT="abc": must be an integer from 0 to 65535');
  });

  it('reports each variable once, with what it must be', () => {
    const err = configError({ ADMIN_TOKEN: 'short with space', LOG_LEVEL: 'loud' });
    expect(named(err.problems)).toEqual(['ADMIN_TOKEN', 'LOG_LEVEL']);
    expect(err.message).toContain(
      'LOG_LEVEL="loud": must be one of fatal, error, warn, info, debug, trace, silent',
    );
  });

  it('derives the public URL from the port actually bound unless PUBLIC_URL is set', () => {
    expect(publicUrlFor(loadConfig({ PORT: '0' }), 41234)).toBe('http://127.0.0.1:41234');
    expect(publicUrlFor(loadConfig({ PORT: '0', PUBLIC_URL: 'https://api.example.com/' }), 41234)).toBe(
      'https://api.example.com',
    );
  });
});
