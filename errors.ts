import type { components } from './generated/openapi.js';

export type ErrorCode = components['schemas']['ErrorCode'];
export type OAuthErrorCode = components['schemas']['OAuthErrorCode'];

/**
 * Codes of errors thrown only on `/oidc` routes, where every error is rendered as an OAuth error
 * (`oauthError`), never as a problem: they name the error in the code and tests but are no value
 * of the spec's ErrorCode, which would promise SDK users a code they can never receive.
 */
export const OAUTH_ONLY_CODES = ['CLIENT_NOT_FOUND'] as const;
type OAuthOnlyCode = (typeof OAUTH_ONLY_CODES)[number];

export interface FieldError {
  in: components['schemas']['FieldErrorLocation'];
  path: string;
  message: string;
}

/**
 * The one error type handlers and the db layer throw. It carries everything the renderer needs,
 * so no caller ever sets an error status itself.
 */
export class AppError extends Error {
  readonly status: number;
  readonly code: ErrorCode | OAuthOnlyCode;
  readonly errors: FieldError[] | undefined;
  /** The OAuth `error` to use when this is rendered on an `/oidc` route. */
  readonly oauthError: OAuthErrorCode | undefined;
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    code: ErrorCode | OAuthOnlyCode,
    message: string,
    options: {
      errors?: FieldError[];
      oauthError?: OAuthErrorCode;
      headers?: Record<string, string>;
      cause?: unknown;
    } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'AppError';
    this.status = status;
    this.code = code;
    this.errors = options.errors;
    this.oauthError = options.oauthError;
    this.headers = options.headers ?? {};
  }
}

/**
 * The one error the pure query modules throw: the request's query, sort, fields or update document
 * is malformed or unsupported. toAppError renders it as a 400 with code INVALID_QUERY; the
 * message must name the operator and the path, as MongoDB's own messages do.
 */
export class QueryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'QueryError';
  }
}

/** A 409 for a name that exists, possibly spelled in another case (`existing`). */
function nameTaken(code: ErrorCode, what: string, name: string, existing: string): AppError {
  return new AppError(
    409,
    code,
    existing === name
      ? `${what} '${name}' already exists.`
      : `${what} '${existing}' already exists; names differing only in case cannot coexist.`,
  );
}

/**
 * The only `/oidc` operation with a body is client registration (RFC 7591), so a body that breaks
 * the schema is bad client metadata; a bad redirect URI has an error code of its own.
 */
function oauthErrorOfValidation(errs: FieldError[]): OAuthErrorCode {
  if (errs.length === 0 || errs.some((e) => e.in !== 'body' || e.path === '')) return 'invalid_request';
  return errs.some((e) => e.path.startsWith('/redirect_uris'))
    ? 'invalid_redirect_uri'
    : 'invalid_client_metadata';
}

/**
 * Every SQLSTATE our own SQL raises (`raise … using errcode` in db/migrations/), declared once.
 * Custom codes use PostgreSQL's class 22 (data exception) or a class of our own (`WP`); a code is
 * never renamed or reused for another meaning (test/unit/error-codes.test.ts checks the migrations
 * against this list). CONTRIBUTING.md says when a new one is warranted.
 */
export const SQLSTATE = {
  /**
   * MongoDB rejected the request while the statement ran (an expression's or a pipeline's error,
   * raised by mdb.expr_fail, mdb.agg_error, mdb.agg_check): a 400 INVALID_QUERY with its message.
   */
  queryRejected: '22MQ0',
  /**
   * A collection's catalog changed after the statement was compiled (mdb.stale_catalog): the
   * server runs it again with a fresh catalog entry; it never reaches a client.
   */
  staleCatalog: 'WP001',
  /**
   * A collection's rule refused a document an end user writes (mdb.rule_refused, migration 0025):
   * a 403 FORBIDDEN naming the rule; the statement failed, so nothing was written.
   */
  ruleRefused: 'WP002',
} as const;

/** The longest path parameter the router accepts: names are at most 64 characters, ids 36. */
export const MAX_PATH_PARAMETER_LENGTH = 100;

/** Seconds a client should wait before retrying when the database is unreachable. */
export const RETRY_AFTER_SECONDS = 5;

export const errors = {
  validation: (errs: FieldError[]) =>
    new AppError(400, 'VALIDATION_FAILED', errs.map((e) => `${e.in}${e.path} ${e.message}`).join('; '), {
      errors: errs,
      oauthError: oauthErrorOfValidation(errs),
    }),
  invalidJson: (message: string) =>
    new AppError(400, 'INVALID_JSON', `The body is not valid JSON: ${message}`, {
      oauthError: 'invalid_request',
    }),
  badRequest: (message: string, oauthError: OAuthErrorCode = 'invalid_request') =>
    new AppError(400, 'BAD_REQUEST', message, { oauthError }),
  unauthorized: (message: string) =>
    new AppError(401, 'UNAUTHORIZED', message, { oauthError: 'invalid_token' }),
  /** An end user's bearer token that does not hold (RFC 6750 section 3.1). */
  invalidAccessToken: (message: string) =>
    new AppError(401, 'UNAUTHORIZED', message, {
      oauthError: 'invalid_token',
      headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
    }),
  /** No credentials on a route that takes an end user's bearer token (RFC 6750 section 3). */
  credentialsMissing: (message: string) =>
    new AppError(401, 'UNAUTHORIZED', message, {
      oauthError: 'invalid_token',
      headers: { 'www-authenticate': 'Bearer' },
    }),
  forbidden: (message: string) => new AppError(403, 'FORBIDDEN', message),
  routeNotFound: (method: string, url: string) =>
    new AppError(404, 'ROUTE_NOT_FOUND', `No route ${method} ${url}.`, { oauthError: 'invalid_request' }),
  workplaceNotFound: (name: string) =>
    new AppError(404, 'WORKPLACE_NOT_FOUND', `Workplace '${name}' does not exist.`),
  workplaceExists: (name: string, existing: string) =>
    nameTaken('WORKPLACE_EXISTS', 'Workplace', name, existing),
  collectionNotFound: (name: string) =>
    new AppError(404, 'COLLECTION_NOT_FOUND', `Collection '${name}' does not exist in this workplace.`),
  collectionExists: (name: string, existing: string) =>
    nameTaken('COLLECTION_EXISTS', 'Collection', name, existing),
  indexNotFound: (name: string) =>
    new AppError(404, 'INDEX_NOT_FOUND', `Index '${name}' does not exist on this collection.`),
  indexExists: (name: string) => new AppError(409, 'INDEX_EXISTS', `Index '${name}' already exists.`),
  connectorNotFound: (id: string) =>
    new AppError(404, 'CONNECTOR_NOT_FOUND', `Connector '${id}' does not exist in this workplace.`),
  tokenNotFound: (id: string) => new AppError(404, 'TOKEN_NOT_FOUND', `There is no scoped token '${id}'.`),
  userNotFound: (login: string) =>
    new AppError(
      404,
      'USER_NOT_FOUND',
      `No user of this workplace signs in as '${login}' (by email or username).`,
    ),
  subjectNotFound: (sub: string) =>
    new AppError(404, 'USER_NOT_FOUND', `No user of this workplace has the subject '${sub}' (its _id).`),
  sessionNotFound: (id: string) =>
    new AppError(404, 'SESSION_NOT_FOUND', `This user has no live session '${id}'.`),
  grantNotFound: (id: string) => new AppError(404, 'GRANT_NOT_FOUND', `This user has no live grant '${id}'.`),
  loginAmbiguous: (login: string) =>
    new AppError(
      409,
      'LOGIN_AMBIGUOUS',
      `More than one user has the email or username '${login}'; make logins unique.`,
    ),
  clientNotFound: (clientId: string) =>
    new AppError(404, 'CLIENT_NOT_FOUND', `This workplace has no client '${clientId}'.`, {
      oauthError: 'invalid_client_id',
    }),
  duplicateKey: (message: string) => new AppError(409, 'DUPLICATE_KEY', message),
  invalidQuery: (message: string) => new AppError(400, 'INVALID_QUERY', message),
  payloadTooLarge: (limit: number) =>
    new AppError(413, 'PAYLOAD_TOO_LARGE', `The body exceeds the limit of ${limit} bytes.`, {
      oauthError: 'invalid_request',
    }),
  unsupportedMediaType: (contentType: string | undefined) =>
    new AppError(
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      `Bodies must be sent as application/json${contentType ? `, not ${contentType}` : ''}.`,
      { oauthError: 'invalid_request' },
    ),
  serviceUnavailable: (message: string, cause?: unknown) =>
    new AppError(503, 'SERVICE_UNAVAILABLE', message, {
      oauthError: 'temporarily_unavailable',
      headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
      cause,
    }),
  internal: (cause?: unknown) =>
    new AppError(500, 'INTERNAL_ERROR', 'An unexpected error occurred; it has been logged.', {
      oauthError: 'server_error',
      cause,
    }),
};

interface ErrorLike {
  code?: unknown;
  statusCode?: unknown;
  message?: unknown;
  validation?: unknown;
  validationContext?: unknown;
}

const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
]);

/** SQLSTATE classes that mean "the database is not able to serve us right now". */
function isUnavailableSqlState(code: string): boolean {
  return (
    code.startsWith('08') || // connection exception
    code.startsWith('53') || // insufficient resources
    code === '57P01' || // admin shutdown
    code === '57P02' || // crash shutdown
    code === '57P03' || // cannot connect now (starting up)
    code === '40001' || // serialization failure
    code === '40P01' // deadlock detected
  );
}

/**
 * Citus: a coordinator's cached connection to a worker that went away (stopped, or restarted since)
 * fails as XX000 with this message (its remote_transaction.c), not with a connection SQLSTATE as a
 * connection it opens anew does (08006). Both mean the worker is unavailable, for now.
 */
function isCitusWorkerLost(code: string, message: string): boolean {
  return code === 'XX000' && message.startsWith('failure on connection marked as essential:');
}

/**
 * Maps anything thrown anywhere (our AppError, Fastify's framework errors, PostgreSQL errors) to
 * an AppError. This is the one place where statuses are chosen for errors we did not create.
 */
export function toAppError(err: unknown, bodyLimit: number): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof QueryError) return errors.invalidQuery(err.message);
  const e = (typeof err === 'object' && err !== null ? err : {}) as ErrorLike;
  const code = typeof e.code === 'string' ? e.code : '';
  const message = typeof e.message === 'string' ? e.message : String(err);

  if (Array.isArray(e.validation)) return errors.validation(fromAjvErrors(e.validation, e.validationContext));
  switch (code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return errors.unsupportedMediaType(message.replace(/^Unsupported Media Type:?\s*/i, '') || undefined);
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return errors.badRequest(`A path parameter is longer than ${MAX_PATH_PARAMETER_LENGTH} characters.`);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errors.payloadTooLarge(bodyLimit);
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return errors.invalidJson(message);
    case '23505':
      return new AppError(409, 'DUPLICATE_KEY', 'A unique key is already taken.', { cause: err });
    case SQLSTATE.ruleRefused:
      return new AppError(403, 'FORBIDDEN', `${message}; nothing was written.`, { cause: err });
    case SQLSTATE.queryRejected:
      // MongoDB's message, the same one the TypeScript evaluation throws as a QueryError.
      return errors.invalidQuery(message);
    case 'DB_DEADLINE_EXCEEDED':
      return errors.serviceUnavailable(
        (err as { sent?: boolean }).sent
          ? 'The database stopped answering and the connection to it was closed. A write it had already received may still be applied when it answers again: check before repeating one that is not idempotent.'
          : 'The database did not answer in time; the request was never sent to it, so nothing was written. Retry later.',
        err,
      );
    case '57014':
      return errors.serviceUnavailable(
        'The statement ran longer than the statement timeout and was cancelled: narrow the query, add an index, or retry when the database is less busy.',
        err,
      );
  }
  // Class 22 (data exception): a value from the request that PostgreSQL cannot take, such as a
  // regex it cannot compile or a string holding \u0000. The message names the value's problem.
  if (/^22[0-9A-Z]{3}$/.test(code)) {
    return new AppError(400, 'INVALID_QUERY', `The database refused a value of the request: ${message}`, {
      cause: err,
    });
  }
  if (err instanceof SyntaxError && e.statusCode === 400) return errors.invalidJson(message);
  if (
    CONNECTION_ERROR_CODES.has(code) ||
    (/^[0-9A-Z]{5}$/.test(code) && isUnavailableSqlState(code)) ||
    isCitusWorkerLost(code, message)
  ) {
    return errors.serviceUnavailable('The database is unavailable; retry later.', err);
  }
  // Fastify's own client errors (bad headers, malformed URLs) carry a 4xx statusCode; keep it.
  if (
    typeof e.statusCode === 'number' &&
    e.statusCode >= 400 &&
    e.statusCode < 500 &&
    code.startsWith('FST_')
  ) {
    if (e.statusCode === 413) return errors.payloadTooLarge(bodyLimit);
    if (e.statusCode === 415) return errors.unsupportedMediaType(undefined);
    return errors.badRequest(message);
  }
  return errors.internal(err);
}

interface AjvErrorLike {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

const CONTEXT_TO_IN: Record<string, FieldError['in']> = {
  body: 'body',
  params: 'path',
  querystring: 'query',
  headers: 'header',
};

function fromAjvErrors(list: AjvErrorLike[], context: unknown): FieldError[] {
  const where = CONTEXT_TO_IN[String(context)] ?? 'body';
  return list.map((a) => {
    let path = a.instancePath ?? '';
    let message = a.message ?? 'is invalid';
    // Name the property itself rather than its parent, so the message says which field is wrong.
    if (a.keyword === 'additionalProperties' && typeof a.params?.additionalProperty === 'string') {
      path = `${path}/${escapePointer(a.params.additionalProperty)}`;
      message = 'is not an allowed property';
    } else if (a.keyword === 'required' && typeof a.params?.missingProperty === 'string') {
      path = `${path}/${escapePointer(a.params.missingProperty)}`;
      message = 'is required';
    } else if (a.keyword === 'enum' && Array.isArray(a.params?.allowedValues)) {
      message = `must be one of ${a.params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
    }
    return { in: where, path, message };
  });
}

export function escapePointer(s: string): string {
  return s.replace(/~/g, '~0').replace(/\//g, '~1');
}
