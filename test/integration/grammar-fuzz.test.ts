/**
 * Grammar-aware fuzz of the storage API: thousands of random MongoDB-shaped requests (filters with
 * every supported operator nested in every supported way, updates with every update operator and
 * modifier, upserts, replacements, sorts, projections, index creation and removal on fuzzed paths)
 * over documents that put different types at the same paths. The generator is
 * test/helpers/mongo-arbitraries.ts; it makes invalid-but-plausible requests too.
 *
 * What must hold: every answer is a 2xx or a 4xx, never a 5xx, and validates against openapi.yaml
 * (createResponseChecker, as in the test harness). Whether the answers are RIGHT is the business of
 * documents-differential.test.ts and the case tables; this test looks for crashes (SQL the database
 * refuses, exceptions in the compiler) on inputs nobody thought of. And a floor on the share of 2xx
 * answers keeps the fuzz meaningful: a generator drifting into mostly-400s would test only parsing.
 *
 * Seeds: a fixed list by default (DEFAULT_SEEDS), so CI is deterministic and a failure is a real
 * defect, not bad luck. To explore: FUZZ_SEED=<n>[,<n>...] or FUZZ_SEED=random (the seed is printed),
 * FUZZ_RUNS=<requests per seed>. To reproduce a failure exactly, also FUZZ_CONCURRENCY=1 (on
 * PostgreSQL the default sends a few requests at a time, so their interleaving varies; PGlite has
 * one connection and runs them one by one anyway). A 5xx failure prints, for each distinct server
 * error: the seed and step, the request, the response, the server's logged error, and the
 * collection's documents and indexes right after it (updates are all or nothing, so that is the
 * state the request saw, give or take the concurrent neighbours on PostgreSQL).
 */
import fc from 'fast-check';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../app.js';
import { migrate } from '../../db/connection/migrate.js';
import { generateSecret, hashSecret, TOKEN_PREFIX } from '../../secrets.js';
import { openTestDatabase, randomName } from '../helpers/app.js';
import { createResponseChecker } from '../helpers/contract.js';
import { actionArb, docArb, type FuzzAction, UNSTORABLE_STRINGS } from '../helpers/mongo-arbitraries.js';
import { propertyRuns } from '../helpers/property-runs.js';

const DEFAULT_SEEDS = [27, 7027, 1_000_003];
const SEEDS =
  process.env.FUZZ_SEED === 'random'
    ? [Math.floor(Math.random() * 2 ** 31)]
    : process.env.FUZZ_SEED
      ? process.env.FUZZ_SEED.split(',').map(Number)
      : DEFAULT_SEEDS;
/** Requests per seed: 3 seeds x 1,050 plus setup is over 3,000 requests a run. */
const RUNS = Number(process.env.FUZZ_RUNS ?? propertyRuns(1050));
const CONCURRENCY = Number(process.env.FUZZ_CONCURRENCY ?? (process.env.DATABASE_URL ? 4 : 1));
/**
 * At least this share of the fuzzed requests must succeed, and of the reads, counts and updates
 * each (measured on the default seeds: ~60% overall, reads ~75%, counts ~90%, updates ~35%).
 */
const MIN_2XX_SHARE = 0.45;
const MIN_2XX_SHARE_PER_KIND: Record<string, number> = { read: 0.5, count: 0.5, update: 0.2 };
/** Documents seeded before the run, and the bounds the run keeps the collection within. */
const SEED_DOCS = 40;
const MIN_DOCS = 10;
const MAX_DOCS = 400;

interface Sent {
  method: 'POST' | 'DELETE' | 'GET';
  url: string;
  body?: unknown;
}

interface Answer {
  status: number;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: arbitrary JSON answers
  body: any;
  /** The contract check's complaint, if the answer does not match openapi.yaml. */
  contractError?: string;
  /** What the server logged at error level for this request. */
  serverError?: string;
}

interface Failure {
  seed: number;
  step: number;
  sent: Sent;
  answer: Answer;
  signature: string;
}

/**
 * The test app of test/helpers/app.ts (same database, same build, every answer checked against
 * the spec), plus a logger: a 5xx body says nothing internal, so the cause is read from the log.
 */
async function startFuzzApp() {
  const db = await openTestDatabase();
  await migrate(db.sql);
  const adminToken = generateSecret(TOKEN_PREFIX.admin);
  const errorsByRequest = new Map<string, string>();
  const logger = pino(
    { level: 'error' },
    {
      write(line: string) {
        const entry = JSON.parse(line) as { reqId?: string; msg?: string; err?: Record<string, unknown> };
        const err = entry.err;
        const text = err
          ? `${String(err.type)}${err.code ? ` [${String(err.code)}]` : ''}: ${String(err.message)}\n${String(
              err.stack ?? '',
            )
              .split('\n')
              .slice(1, 6)
              .join('\n')}`
          : String(entry.msg);
        if (entry.reqId) errorsByRequest.set(entry.reqId, text);
      },
    },
  );
  const app = await buildApp({ sql: db.sql, adminTokenHash: hashSecret(adminToken), logger });
  await app.ready();
  const check = createResponseChecker();

  async function send(s: Sent): Promise<Answer> {
    const res = await app.inject({
      method: s.method,
      url: s.url,
      headers: {
        'x-auth-token': adminToken,
        ...(s.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(s.body !== undefined ? { payload: JSON.stringify(s.body) } : {}),
    });
    const contentType = res.headers['content-type'];
    let contractError: string | undefined;
    try {
      check(
        s.method,
        s.url,
        res.statusCode,
        typeof contentType === 'string' ? contentType : undefined,
        res.body,
      );
    } catch (e) {
      contractError = (e as Error).message;
    }
    let body: unknown;
    try {
      body = res.body === '' ? undefined : JSON.parse(res.body);
    } catch {
      body = undefined;
    }
    const requestId = (body as { request_id?: string } | undefined)?.request_id;
    return {
      status: res.statusCode,
      text: res.body,
      body,
      ...(contractError !== undefined ? { contractError } : {}),
      ...(requestId && errorsByRequest.has(requestId) ? { serverError: errorsByRequest.get(requestId) } : {}),
    };
  }

  return {
    databaseKind: db.kind,
    send,
    async close() {
      await app.close();
      await db.close();
    },
  };
}

/** Groups 5xx answers by the server's error with the literal values taken out. */
function signatureOf(a: Answer): string {
  if (a.contractError) return `contract: ${a.contractError.slice(0, 80)}`;
  const first = (a.serverError ?? a.text).split('\n')[0] ?? '';
  return `${a.status} ${first
    .replace(/"[^"]*"|'[^']*'/g, '…')
    .replace(/\b\d+\b/g, 'N')
    .slice(0, 160)}`;
}

/** JSON with long strings shortened (`"bbbb…(3001 characters)"`): the seed and step reproduce the exact request. */
function show(value: unknown): string {
  return JSON.stringify(value, (_key, v) =>
    typeof v === 'string' && v.length > 40 ? `${v.slice(0, 12)}…(${v.length} characters)` : v,
  );
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}… (${text.length} characters)` : text;
}

let fuzz: Awaited<ReturnType<typeof startFuzzApp>>;

beforeAll(async () => {
  fuzz = await startFuzzApp();
});

afterAll(async () => {
  await fuzz?.close();
});

describe(`grammar fuzz (seeds ${SEEDS.join(', ')}; ${RUNS} requests each)`, () => {
  for (const seed of SEEDS) {
    it(`seed ${seed}: every answer is a 2xx or 4xx that matches the contract`, {
      timeout: 600_000,
    }, async () => {
      const started = Date.now();
      const workplace = randomName('fuzz');
      const made = await fuzz.send({ method: 'POST', url: '/v1/workplaces', body: { name: workplace } });
      expect(made.status, made.text).toBe(201);
      const base = `/v1/workplaces/${workplace}/storages`;
      const made2 = await fuzz.send({ method: 'POST', url: base, body: { name: 'fz' } });
      expect(made2.status, made2.text).toBe(201);
      const url = `${base}/fz`;

      // Two indexes from the start, so the indexed SQL shapes run from the first request: a unique
      // one (on `u`, which documents nearly always hold, distinct) and a compound one on paths the
      // filters use all the time. The run drops and creates more (fz0..fz9).
      const indexes = new Set<string>();
      for (const body of [
        { name: 'uniqU', key: ['u'], unique: true },
        { name: 'byAB', key: ['a', { 'b.x': -1 }] },
      ]) {
        const res = await fuzz.send({ method: 'POST', url: `${url}/indexes`, body });
        expect(res.status, res.text).toBe(201);
        indexes.add(body.name);
      }

      const refill = async (salt: number) => {
        const docs = fc
          .sample(docArb, { seed: seed + salt, numRuns: SEED_DOCS })
          .filter(
            (d) =>
              !UNSTORABLE_STRINGS.some((u) => JSON.stringify(d).includes(JSON.stringify(u).slice(1, -1))),
          )
          .map((d, i) => ({ ...d, _id: `s${salt}-${i}`, u: salt * 1000 + i }));
        const res = await fuzz.send({ method: 'POST', url: `${url}/create`, body: { docs } });
        // A unique index the run made may refuse some of them: then one by one, keeping what fits.
        if (res.status === 409)
          for (const doc of docs) {
            const one = await fuzz.send({ method: 'POST', url: `${url}/create`, body: { docs: [doc] } });
            expect([201, 409], one.text).toContain(one.status);
          }
        else expect(res.status, res.text).toBe(201);
      };
      await refill(0);

      const actions = fc.sample(actionArb, { seed, numRuns: RUNS });
      const statuses = new Map<number, number>();
      const byKind = new Map<string, { ok: number; all: number }>();
      const failures: Failure[] = [];
      const firstOfSignature = new Map<string, Failure & { snapshot: string }>();
      /** FUZZ_VERBOSE=1: the most common 4xx reasons, to see what the generator spends its requests on. */
      const refusals = new Map<string, number>();

      const toRequest = (action: FuzzAction): Sent => {
        switch (action.kind) {
          case 'createIndex':
            return { method: 'POST', url: `${url}/indexes`, body: action.body };
          case 'dropIndex': {
            const names = [...indexes];
            const name = action.pick < names.length ? (names[action.pick] as string) : 'fzMissing';
            return { method: 'DELETE', url: `${url}/indexes/${name}` };
          }
          default:
            return { method: 'POST', url: `${url}/${action.kind}`, body: action.body };
        }
      };

      const snapshot = async () => {
        const docs = await fuzz.send({
          method: 'POST',
          url: `${url}/read`,
          body: { query: {}, limit: 1000 },
        });
        const idx = await fuzz.send({ method: 'GET', url: `${url}/indexes` });
        return `indexes: ${show(idx.body?.result)}\ndocuments: ${show(docs.body?.result)}`;
      };

      for (let step = 0; step < actions.length; step += CONCURRENCY) {
        if (step % 100 < CONCURRENCY) {
          const count = await fuzz.send({ method: 'POST', url: `${url}/count`, body: { query: {} } });
          const n = count.body?.result?.count as number;
          if (n < MIN_DOCS) await refill(step + 1);
          else if (n > MAX_DOCS)
            await fuzz.send({ method: 'POST', url: `${url}/delete`, body: { query: {} } });
        }
        const batch = actions.slice(step, step + CONCURRENCY);
        const sent = batch.map(toRequest);
        const answers = await Promise.all(sent.map((s) => fuzz.send(s)));
        for (const [i, answer] of answers.entries()) {
          const action = batch[i] as FuzzAction;
          const s = sent[i] as Sent;
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          const kind = byKind.get(action.kind) ?? { ok: 0, all: 0 };
          kind.all++;
          if (answer.status < 300) kind.ok++;
          byKind.set(action.kind, kind);
          if (action.kind === 'createIndex' && answer.status === 201) indexes.add(String(action.body.name));
          if (action.kind === 'dropIndex' && answer.status === 204)
            indexes.delete(s.url.split('/').pop() as string);
          if (answer.status >= 400 && answer.status < 500) {
            const why = `${action.kind} ${answer.status} ${String(answer.body?.detail ?? answer.body?.code)
              .replace(/'[^']*'|"[^"]*"|\{.*\}/g, '…')
              .replace(/\d+/g, 'N')
              .slice(0, 90)}`;
            refusals.set(why, (refusals.get(why) ?? 0) + 1);
          }
          if (answer.status >= 500 || answer.contractError) {
            const failure = { seed, step: step + i, sent: s, answer, signature: signatureOf(answer) };
            failures.push(failure);
            if (!firstOfSignature.has(failure.signature))
              firstOfSignature.set(failure.signature, { ...failure, snapshot: await snapshot() });
          }
        }
      }

      const total = actions.length;
      const ok = [...statuses].filter(([s]) => s < 300).reduce((sum, [, n]) => sum + n, 0);
      const seconds = (Date.now() - started) / 1000;
      const kinds = [...byKind].map(([k, v]) => `${k} ${v.ok}/${v.all}`).join(', ');
      const codes = [...statuses]
        .sort(([a], [b]) => a - b)
        .map(([s, n]) => `${s}:${n}`)
        .join(' ');
      console.log(
        `grammar fuzz seed=${seed} on ${fuzz.databaseKind}: ${total} requests in ${seconds.toFixed(1)} s, ` +
          `${((100 * ok) / total).toFixed(1)}% 2xx [${codes}] (2xx per kind: ${kinds}), ` +
          `${failures.length} failures, ${firstOfSignature.size} distinct` +
          ` (reproduce: FUZZ_SEED=${seed} FUZZ_RUNS=${RUNS} FUZZ_CONCURRENCY=1)`,
      );

      if (process.env.FUZZ_VERBOSE)
        console.log(
          [...refusals]
            .sort(([, a], [, b]) => b - a)
            .slice(0, Number(process.env.FUZZ_VERBOSE) || 40)
            .map(([why, n]) => `${String(n).padStart(5)} ${why}`)
            .join('\n'),
        );

      const report = [...firstOfSignature.values()]
        .map((f) =>
          [
            `--- ${f.signature}`,
            `seed ${f.seed}, step ${f.step} (FUZZ_SEED=${f.seed} FUZZ_CONCURRENCY=1), ${failures.filter((g) => g.signature === f.signature).length} times`,
            `request (long strings shortened): ${f.sent.method} ${f.sent.url.replace(url, '<collection>')} ${show(f.sent.body)}`,
            `response: ${f.answer.status} ${clip(f.answer.text, 600)}`,
            f.answer.contractError ? `contract: ${f.answer.contractError}` : '',
            f.answer.serverError ? `server error: ${f.answer.serverError}` : '',
            `collection right after (long strings shortened): ${clip(f.snapshot, 3000)}`,
          ]
            .filter(Boolean)
            .join('\n'),
        )
        .join('\n\n');
      expect(failures.length, `${failures.length} answers were 5xx or broke the contract:\n\n${report}`).toBe(
        0,
      );
      expect(
        ok / total,
        `only ${ok} of ${total} answers were 2xx: [${codes}] (${kinds})`,
      ).toBeGreaterThanOrEqual(MIN_2XX_SHARE);
      for (const [kind, floor] of Object.entries(MIN_2XX_SHARE_PER_KIND)) {
        const k = byKind.get(kind) ?? { ok: 0, all: 0 };
        expect(k.ok / k.all, `only ${k.ok} of ${k.all} ${kind} answers were 2xx`).toBeGreaterThanOrEqual(
          floor,
        );
      }
    });
  }
});
