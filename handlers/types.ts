import type { FastifyBaseLogger } from 'fastify';
import type { Sql } from '../db/connection/sql.js';
import type { Caller } from '../db/platform/tokens.js';
import type { CatalogCache } from '../db/storage/catalog-cache.js';
import type { Statistics } from '../db/storage/statistics.js';
import type { operations } from '../generated/openapi.js';
import type { EncodedJson } from './encoded-json.js';

// Handlers read the caller from their input; it is defined with the tokens it is made from.
export type { Caller };

export type OperationId = keyof operations;

type JsonContent<T> = T extends { content: { 'application/json': infer B } } ? B : never;

type PathOf<O> = O extends { parameters: { path: infer P } } ? P : Record<string, never>;
type QueryOf<O> = O extends { parameters: { query?: infer Q } }
  ? [Q] extends [never]
    ? Record<string, never>
    : Q
  : never;
type BodyOf<O> = O extends { requestBody: infer R }
  ? JsonContent<R>
  : O extends { requestBody?: infer R }
    ? JsonContent<R> | undefined
    : undefined;

/** What a handler receives: the validated request, never the Fastify objects. */
export interface Input<Op extends OperationId> {
  params: PathOf<operations[Op]>;
  query: QueryOf<operations[Op]>;
  body: BodyOf<operations[Op]>;
  /**
   * The body's JSON text when storing it as sent stores what storing `body` would (its numbers
   * are spelled as JSON.stringify spells them), for writes that can skip serializing `body` again.
   */
  verbatimBody: string | undefined;
  caller: Caller;
  log: FastifyBaseLogger;
}

type Responses<Op extends OperationId> = operations[Op]['responses'];
type SuccessStatus<Op extends OperationId> = Extract<keyof Responses<Op>, 200 | 201 | 202 | 204>;

/**
 * What a handler returns: one of the operation's success responses, with exactly the body the
 * spec declares for that status. Error statuses are not representable: handlers throw AppError.
 */
export type Output<Op extends OperationId> = {
  [S in SuccessStatus<Op>]: [JsonContent<Responses<Op>[S]>] extends [never]
    ? { status: S; headers?: Record<string, string> }
    : {
        status: S;
        body: JsonContent<Responses<Op>[S]> | EncodedJson<JsonContent<Responses<Op>[S]>>;
        headers?: Record<string, string>;
      };
}[SuccessStatus<Op>];

export type Handler<Op extends OperationId> = (input: Input<Op>) => Promise<Output<Op>>;

/** One handler per operationId: a missing or misspelled one fails type-checking. */
export type Handlers = { [Op in OperationId]: Handler<Op> };

export interface HandlerDeps {
  sql: Sql;
  statistics: Statistics;
  catalog: CatalogCache;
  /** Told when a workplace is gone, so that what a process keeps for it (its OpenID Provider) goes too. */
  workplaceDeleted?: (name: string) => void;
  /** Told when a handler ended grants of a workplace (a session ended, a client deleted), at once. */
  grantsEnded?: (name: string) => void;
  /** Told when what gives a workplace's CORS origins changed: its clients, or its OIDC settings. */
  originsChanged?: (name: string) => void;
}
