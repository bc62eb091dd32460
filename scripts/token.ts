/**
 * Operators' CLI for scoped X-Auth-Tokens, against the configured database (DATABASE_URL, or the
 * embedded one in DATA_DIR, which must not be open in a running server at the same time):
 *
 *   npm run token -- create --workplace acme [--workplace beta] [--read-only] [--label "shop"] [--expires-in 30d]
 *   npm run token -- list
 *   npm run token -- revoke <token id>
 *
 * It does what POST/GET/DELETE /v1/tokens do, through the same code.
 */
import { parseArgs } from 'node:util';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { migrate } from '../db/connection/migrate.js';
import { openDatabase } from '../db/connection/open.js';
import { listScopedTokens, revokeScopedToken } from '../db/platform/tokens.js';
import { AppError } from '../errors.js';
import type { components } from '../generated/openapi.js';
import { issueToken, presentToken } from '../handlers/tokens.js';
import { loadSpec } from '../http/spec.js';

// ajv-formats is CommonJS; under NodeNext its default import is the module object.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

const USAGE = `usage:
  npm run token -- create --workplace <name> [--workplace <name> ...] [--read-only] [--label <text>] [--expires-in <n>[s|m|h|d]]
  npm run token -- list
  npm run token -- revoke <token id>`;

type TokenCreate = components['schemas']['TokenCreate'];

/** The same schema the HTTP operation validates its body with, so the CLI accepts nothing more. */
function validateAgainstSpec(input: TokenCreate): void {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(loadSpec() as object, 'openapi');
  const validate = ajv.compile({ $ref: 'openapi#/components/schemas/TokenCreate' });
  if (!validate(input)) {
    const problems = (validate.errors ?? []).map((e) => `${e.instancePath || 'input'} ${e.message}`);
    throw new Error(
      problems
        .join('; ')
        .replace('/workplaces must NOT have fewer than 1 items', 'give at least one --workplace'),
    );
  }
}

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

/** `90`, `90s`, `15m`, `12h` or `30d`, in seconds. */
export function parseDuration(text: string): number {
  const m = /^([1-9][0-9]{0,9})([smhd]?)$/.exec(text);
  if (!m) throw new Error(`--expires-in must look like 3600, 90m, 12h or 30d, not '${text}'`);
  return Number(m[1]) * (UNIT_SECONDS[m[2] || 's'] as number);
}

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      workplace: { type: 'string', multiple: true },
      'read-only': { type: 'boolean', default: false },
      label: { type: 'string' },
      'expires-in': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command, ...rest] = positionals;
  if (values.help || !command) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  const db = await openDatabase({
    databaseUrl: process.env.DATABASE_URL || undefined,
    dataDir: process.env.DATA_DIR || './data',
    dbPoolMax: 1,
  });
  try {
    await migrate(db.sql);
    switch (command) {
      case 'create': {
        const expiresIn =
          values['expires-in'] === undefined ? undefined : parseDuration(values['expires-in']);
        const input: TokenCreate = {
          workplaces: values.workplace ?? [],
          access: values['read-only'] ? 'read' : 'read_write',
          ...(values.label !== undefined ? { label: values.label } : {}),
          ...(expiresIn !== undefined
            ? { expires_at: new Date(Date.now() + expiresIn * 1000).toISOString() }
            : {}),
        };
        validateAgainstSpec(input);
        const { token, secret } = await issueToken({ sql: db.sql }, input);
        console.error(
          `Token ${token.id} (${token.access}, workplaces: ${token.workplaces.join(', ')}). The secret is shown only now:`,
        );
        console.log(secret);
        return 0;
      }
      case 'list':
        console.log(JSON.stringify((await listScopedTokens(db.sql)).map(presentToken), null, 2));
        return 0;
      case 'revoke': {
        const id = rest[0];
        if (!id || !/^[0-9a-f-]{36}$/.test(id)) throw new Error('revoke needs a token id (see list)');
        if (!(await revokeScopedToken(db.sql, id))) throw new Error(`There is no scoped token '${id}'.`);
        console.error(`Token ${id} is revoked.`);
        return 0;
      }
      default:
        console.error(`unknown command '${command}'\n${USAGE}`);
        return 2;
    }
  } finally {
    await db.close();
  }
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  // Validation failures name the field; show them the way the API would.
  const detail =
    err instanceof AppError && err.errors
      ? err.errors.map((e) => `${e.path.replace(/^\//, '')} ${e.message}`).join('; ')
      : (err as Error).message;
  console.error(`token: ${detail}`);
  process.exitCode = 1;
}
