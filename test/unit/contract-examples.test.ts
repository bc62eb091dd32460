// The examples in openapi.yaml are what Swagger UI shows and what SDK users copy: each must be a
// value the schema it illustrates accepts, and an error example must carry a status and code that
// the response it documents can really carry (the codes come from errors.ts, not from the spec).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { escapePointer } from '../../errors.js';
import { loadSpec } from '../../http/spec.js';
import { createSpecAjv } from '../helpers/contract.js';

type Node = Record<string, unknown>;

const spec = loadSpec() as unknown as Node;
const ajv = createSpecAjv(loadSpec());
const root = fileURLToPath(new URL('../..', import.meta.url));

function isNode(v: unknown): v is Node {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function resolve(ref: string): Node {
  let at: unknown = spec;
  for (const seg of ref.replace(/^#\//, '').split('/'))
    at = (at as Node)[seg.replaceAll('~1', '/').replaceAll('~0', '~')];
  if (!isNode(at)) throw new Error(`${ref} does not resolve`);
  return at;
}

function deref(n: Node): Node {
  return typeof n.$ref === 'string' ? resolve(n.$ref) : n;
}

/** A pointer Ajv accepts in a `$ref` fragment (path templates hold `{` and `}`). */
function ref(path: string[]): string {
  return `openapi#/${path.map((s) => encodeURIComponent(escapePointer(s))).join('/')}`;
}

interface Example {
  /** Where it is written, for messages. */
  where: string;
  /** The `$ref` of the schema it illustrates. */
  schema: string;
  value: unknown;
}

/**
 * Every example of the document: `example` and `examples` beside a `schema` (media types and
 * parameters, named examples resolved through components/examples) and a schema's own `examples`.
 */
function allExamples(): Example[] {
  const found: Example[] = [];
  const walk = (n: unknown, path: string[]) => {
    if (Array.isArray(n)) {
      n.forEach((v, i) => {
        walk(v, [...path, String(i)]);
      });
      return;
    }
    if (!isNode(n)) return;
    const where = path.join('/');
    if ('schema' in n) {
      const schema = ref([...path, 'schema']);
      if ('example' in n) found.push({ where: `${where}/example`, schema, value: n.example });
      if (isNode(n.examples)) {
        for (const [name, ex] of Object.entries(n.examples)) {
          const resolved = deref(ex as Node);
          found.push({ where: `${where}/examples/${name}`, schema, value: resolved.value });
        }
      }
    } else if (Array.isArray(n.examples) && path.includes('schemas')) {
      n.examples.forEach((value, i) => {
        found.push({ where: `${where}/examples/${i}`, schema: ref(path), value });
      });
    }
    for (const [k, v] of Object.entries(n)) if (k !== 'examples' && k !== 'example') walk(v, [...path, k]);
  };
  walk(spec.paths, ['paths']);
  walk(spec.components, ['components']);
  return found;
}

const examples = allExamples();

/** Every status each problem code is produced with, read from the production sources. */
function problemCodesByStatus(): Map<number, Set<string>> {
  const sources = (path: string): string[] => {
    const full = join(root, path);
    if (statSync(full).isFile()) return path.endsWith('.ts') ? [readFileSync(full, 'utf8')] : [];
    return readdirSync(full).flatMap((name) => sources(join(path, name)));
  };
  const byStatus = new Map<number, Set<string>>();
  const add = (status: number, code: string) =>
    byStatus.set(status, (byStatus.get(status) ?? new Set()).add(code));
  for (const text of ['errors.ts', 'handlers', 'db', 'http', 'oidc', 'app.ts'].flatMap(sources)) {
    for (const m of text.matchAll(/new AppError\(\s*(\d{3}),\s*'([A-Z_]+)'/g))
      add(Number(m[1]), m[2] as string);
    for (const m of text.matchAll(/nameTaken\(\s*'([A-Z_]+)'/g)) add(409, m[1] as string);
  }
  return byStatus;
}

/**
 * The OAuth `error` each status can carry on the `/oidc` routes (error-response.ts renders
 * `oauthError`, else `server_error` from 500 and `invalid_request` below it).
 */
const OAUTH_ERRORS: Record<number, string[]> = {
  400: ['invalid_request', 'invalid_client_metadata', 'invalid_redirect_uri'],
  401: ['invalid_token'],
  404: ['invalid_client_id', 'invalid_request'],
  413: ['invalid_request'],
  415: ['invalid_request'],
  500: ['server_error'],
  503: ['temporarily_unavailable'],
};

interface DocumentedResponse {
  where: string;
  status: number;
  response: Node;
}

function operationResponses(): DocumentedResponse[] {
  const out: DocumentedResponse[] = [];
  for (const [path, item] of Object.entries(spec.paths as Node)) {
    for (const [method, op] of Object.entries(item as Node)) {
      if (!isNode(op) || !isNode(op.responses)) continue;
      for (const [status, response] of Object.entries(op.responses)) {
        out.push({
          where: `${method.toUpperCase()} ${path} ${status}`,
          status: Number(status),
          response: deref(response as Node),
        });
      }
    }
  }
  return out;
}

function namedExamples(media: Node): [string, unknown][] {
  const own = 'example' in media ? [['example', media.example] as [string, unknown]] : [];
  const named = Object.entries(isNode(media.examples) ? media.examples : {}).map(
    ([name, ex]) => [name, deref(ex as Node).value] as [string, unknown],
  );
  return [...own, ...named];
}

describe('examples in openapi.yaml', () => {
  it('are found in request bodies, responses and schemas', () => {
    expect(examples.some((e) => e.where.includes('/requestBody/'))).toBe(true);
    expect(examples.some((e) => e.where.startsWith('components/responses/'))).toBe(true);
    expect(examples.some((e) => e.where.includes('/responses/') && e.where.startsWith('paths/'))).toBe(true);
    expect(examples.some((e) => e.where.startsWith('components/schemas/'))).toBe(true);
  });

  it.each(examples.map((e) => [e.where, e] as const))('%s matches its schema', (_where, e) => {
    expect(e.value, 'an example without a value').not.toBeUndefined();
    const validate = ajv.getSchema(e.schema) ?? ajv.compile({ $ref: e.schema });
    const ok = validate(e.value);
    expect(ok ? [] : validate.errors).toEqual([]);
  });

  it('exist for every response with a body, so that Swagger UI shows no invented values', () => {
    const missing = operationResponses().flatMap(({ where, response }) =>
      Object.entries((response.content as Node | undefined) ?? {})
        .filter(([, media]) => namedExamples(media as Node).length === 0)
        .map(([type]) => `${where} ${type}`),
    );
    expect(missing).toEqual([]);
  });

  it('of an error carry the status of the response they document and a code it can carry', () => {
    const codes = problemCodesByStatus();
    const wrong: string[] = [];
    let checked = 0;
    for (const { where, status, response } of operationResponses()) {
      if (status < 400) continue;
      for (const [type, media] of Object.entries((response.content as Node | undefined) ?? {})) {
        for (const [name, value] of namedExamples(media as Node)) {
          const v = value as Node;
          checked++;
          const at = `${where} ${type} ${name}`;
          if (type === 'application/problem+json') {
            if (v.status !== status) wrong.push(`${at}: status ${String(v.status)}`);
            if (v.title !== STATUS_CODES[status]) wrong.push(`${at}: title ${String(v.title)}`);
            if (!codes.get(status)?.has(String(v.code))) wrong.push(`${at}: code ${String(v.code)}`);
          } else if (!OAUTH_ERRORS[status]?.includes(String(v.error))) {
            wrong.push(`${at}: error ${String(v.error)}`);
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(100);
    expect(wrong).toEqual([]);
  });

  it('of a shared error response show every code its description names', () => {
    const components = spec.components as Node;
    const schemas = components.schemas as Node;
    const known = new Set([
      ...((schemas.ErrorCode as Node).enum as string[]),
      ...((schemas.OAuthErrorCode as Node).enum as string[]),
    ]);
    for (const [name, r] of Object.entries(components.responses as Node)) {
      const response = r as Node;
      const words = String(response.description).match(/`[A-Za-z_]+`/g) ?? [];
      const named = new Set(words.map((w) => w.slice(1, -1)).filter((w) => known.has(w)));
      const shown = new Set(
        Object.values((response.content as Node | undefined) ?? {}).flatMap((media) =>
          namedExamples(media as Node).map(([, v]) => String((v as Node).code ?? (v as Node).error)),
        ),
      );
      for (const code of named) expect(shown, `${name} names ${code}`).toContain(code);
    }
  });

  it('of a client list or an update without generate_token show no client_secret', () => {
    const registration = (spec.paths as Node)['/oidc/{name}/registration'] as Node;
    const saved = (spec.paths as Node)['/oidc/{name}/oidc/registration'] as Node;
    const read = ((registration.get as Node).responses as Node)['200'] as Node;
    const updated = ((saved.post as Node).responses as Node)['200'] as Node;
    for (const media of [read, updated].flatMap((r) => Object.values(r.content as Node))) {
      for (const [name, value] of namedExamples(media as Node))
        expect(JSON.stringify(value), name).not.toContain('client_secret"');
    }
    const client = ((spec.components as Node).schemas as Node).Client as Node;
    for (const value of client.examples as unknown[]) expect(value).not.toHaveProperty('client_secret');
  });
});
