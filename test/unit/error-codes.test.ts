// The spec's ErrorCode enum and the codes the server produces stay one list: a code in the enum
// that no code path produces misleads every SDK user who handles it (TypeScript already refuses a
// produced code that the enum lacks).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { OAUTH_ONLY_CODES, SQLSTATE } from '../../errors.js';
import { loadSpec } from '../../http/spec.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const PRODUCTION = [
  'app.ts',
  'server.ts',
  'config.ts',
  'errors.ts',
  'secrets.ts',
  'handlers',
  'db',
  'mongo',
  'http',
  'oidc',
];

function sources(path: string): string[] {
  const full = join(root, path);
  if (statSync(full).isFile()) return path.endsWith('.ts') ? [readFileSync(full, 'utf8')] : [];
  return readdirSync(full).flatMap((name) => sources(join(path, name)));
}

function specCodes(): string[] {
  const spec = loadSpec() as unknown as { components: { schemas: Record<string, { enum?: string[] }> } };
  return spec.components.schemas.ErrorCode?.enum ?? [];
}

/** Every code production code gives an AppError: a literal after the status, or to nameTaken(). */
function producedCodes(): Set<string> {
  const codes = new Set<string>();
  for (const text of PRODUCTION.flatMap(sources)) {
    for (const m of text.matchAll(/(?:new AppError\(\s*\d{3},\s*|nameTaken\(\s*)'([A-Z_]+)'/g)) {
      codes.add(m[1] as string);
    }
  }
  return codes;
}

describe('error codes', () => {
  it('in the spec are exactly those the server produces', () => {
    const spec = specCodes();
    expect(spec.length).toBeGreaterThan(10);
    const oauthOnly: readonly string[] = OAUTH_ONLY_CODES;
    const problemCodes = [...producedCodes()].filter((c) => !oauthOnly.includes(c));
    expect(problemCodes.sort()).toEqual([...spec].sort());
  });

  it('that only go out as OAuth errors are produced, only under handlers of /oidc routes, and not in the spec', () => {
    const produced = producedCodes();
    for (const code of OAUTH_ONLY_CODES) {
      expect(produced, code).toContain(code);
      expect(specCodes(), code).not.toContain(code);
    }
    // errors.ts names the factory; only the /oidc client handlers may call it.
    const callers = readdirSync(join(root, 'handlers')).filter((name) =>
      readFileSync(join(root, 'handlers', name), 'utf8').includes('errors.clientNotFound('),
    );
    expect(callers).toEqual(['oidc-clients.ts']);
  });
});

/**
 * The SQLSTATEs the database's functions raise as the migrations leave them: each function's last
 * definition (a later migration's `create or replace` supersedes an earlier one).
 */
function raisedSqlstates(): Map<string, string> {
  const dir = join(root, 'db', 'migrations');
  const lastDefinition = new Map<string, string>();
  for (const file of readdirSync(dir).sort()) {
    const text = readFileSync(join(dir, file), 'utf8');
    for (const m of text.matchAll(/create (?:or replace )?function (mdb\.\w+)\([\s\S]*?\$\$[\s\S]*?\$\$;/gi))
      lastDefinition.set(m[1] as string, m[0]);
  }
  const raised = new Map<string, string>();
  for (const [fn, body] of lastDefinition)
    for (const m of body.matchAll(/errcode = '([0-9A-Z]{5})'/g)) raised.set(m[1] as string, fn);
  return raised;
}

describe('SQLSTATEs of our own SQL', () => {
  it('are each declared once in errors.ts, and each declared one is raised', () => {
    const raised = raisedSqlstates();
    expect(raised.size).toBeGreaterThan(0);
    const declared: string[] = Object.values(SQLSTATE);
    expect(new Set(declared).size, 'a code declared twice').toBe(declared.length);
    for (const [code, fn] of raised) expect(declared, `${fn} raises ${code}`).toContain(code);
    for (const code of declared) expect([...raised.keys()], code).toContain(code);
  });
});
