/**
 * The typed client of this API: openapi-fetch over the types `npm run gen` writes from openapi.yaml,
 * so a request or result that disagrees with the contract is a compile error in the caller. One
 * client per credential, each used only where it is accepted: the X-Auth-Token on /v1, the
 * workplace OIDC token on /oidc, an end user's access token on the document routes. `unwrap` turns an answer into its typed
 * body or a thrown error: `ProblemError` for /v1's problem+json, `OAuthError` for /oidc's OAuth errors.
 */
import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from '../generated/openapi.js';

export type { components, paths };
export type PlatformClient = Client<paths>;
export type Problem = components['schemas']['Problem'];
export type FieldError = components['schemas']['FieldError'];

export interface ClientOptions {
  /** Where the API is served, e.g. `https://platform.example` (no trailing `/v1`). */
  baseUrl: string;
  /** A fetch to use instead of the global one (a proxy agent, a test double). */
  fetch?: (request: Request) => Promise<Response>;
}

/** A client for the /v1 operations, sending the admin token or a scoped `wpt_...` token as X-Auth-Token. */
export function createPlatformClient(options: ClientOptions & { token: string }): PlatformClient {
  return createClient<paths>({
    baseUrl: options.baseUrl,
    headers: { 'X-Auth-Token': options.token },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}

/**
 * A client for one workplace's /oidc client registration, sending its OIDC token. The header is
 * `Authorizarion`, spelled as the interface defines it; the server also takes the correct spelling,
 * but the interface's is the one every version of the server reads first.
 */
export function createOidcClient(options: ClientOptions & { workplaceToken: string }): PlatformClient {
  return createClient<paths>({
    baseUrl: options.baseUrl,
    headers: { Authorizarion: `Bearer ${options.workplaceToken}` },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}

/** The document operations an end user's access token may call (`EndUserToken` in the contract). */
type DocumentOperation =
  | 'read'
  | 'create'
  | 'update'
  | 'count'
  | 'distinct'
  | 'aggregate'
  | 'delete'
  | 'update-one'
  | 'replace-one'
  | 'delete-one'
  | 'find-one-and-update'
  | 'find-one-and-replace'
  | 'find-one-and-delete';
type DocumentPath<O extends DocumentOperation> = `/v1/workplaces/{name}/storages/{storage_name}/${O}`;
type DocumentBody<O extends DocumentOperation> = paths[DocumentPath<O>]['post'] extends {
  requestBody: { content: { 'application/json': infer B } };
}
  ? B
  : never;
type DocumentResult<O extends DocumentOperation> = paths[DocumentPath<O>]['post'] extends {
  responses: { 200: { content: { 'application/json': infer R } } };
}
  ? R
  : paths[DocumentPath<O>]['post'] extends {
        responses: { 201: { content: { 'application/json': infer R } } };
      }
    ? R
    : never;

export interface EndUserClient {
  /** The underlying client, which sends the current access token on every request. */
  readonly client: PlatformClient;
  readonly workplace: string;
  /** Replaces the access token (after a refresh): the next request sends the new one. */
  setAccessToken(accessToken: string): void;
  /**
   * Runs a document operation on a collection of the workplace, under its rules: the typed body
   * of the answer, or a thrown `ProblemError` (`401` for a token that no longer holds, `403` for
   * what the rules refuse).
   */
  run<O extends DocumentOperation>(
    operation: O,
    collection: string,
    body: DocumentBody<O>,
  ): Promise<DocumentResult<O>>;
}

/**
 * A client for a workplace's end user (a browser or mobile app): the document routes with the
 * access token the workplace's OpenID Provider issued for its default audience (sign in with
 * `resource=<baseUrl>/oidc/<workplace>`). What it may do is the collections' rules (docs/rules.md).
 */
export function createEndUserClient(
  options: ClientOptions & { workplace: string; accessToken: string },
): EndUserClient {
  let accessToken = options.accessToken;
  const client = createClient<paths>({
    baseUrl: options.baseUrl,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  client.use({
    onRequest({ request }) {
      request.headers.set('Authorization', `Bearer ${accessToken}`);
      return request;
    },
  });
  return {
    client,
    workplace: options.workplace,
    setAccessToken(token) {
      accessToken = token;
    },
    async run(operation, collection, body) {
      const path = `/v1/workplaces/{name}/storages/{storage_name}/${operation}` as DocumentPath<'read'>;
      const request = client.POST(path, {
        params: { path: { name: options.workplace, storage_name: collection } },
        body: body as DocumentBody<'read'>,
      });
      return (await unwrap(request)) as never;
    },
  };
}

/** Any answer outside 2xx. `body` is the parsed JSON body, or the text when it is not JSON. */
export class ApiError extends Error {
  readonly status: number;
  readonly body: unknown;
  constructor(status: number, body: unknown, message: string) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
  }
}

/** A /v1 problem (RFC 9457): `code` tells problems apart, `errors` lists every broken rule. */
export class ProblemError extends ApiError {
  readonly code: Problem['code'];
  readonly detail: string;
  readonly errors: FieldError[];
  readonly problem: Problem;
  constructor(problem: Problem) {
    super(problem.status, problem, `${problem.status} ${problem.code}: ${problem.detail}`);
    this.name = 'ProblemError';
    this.code = problem.code;
    this.detail = problem.detail;
    this.errors = problem.errors ?? [];
    this.problem = problem;
  }
}

/** An OAuth error of the /oidc routes (RFC 6749 section 5.2, RFC 7591 section 3.2.2). */
export class OAuthError extends ApiError {
  readonly error: components['schemas']['OAuthError']['error'];
  readonly description: string | undefined;
  constructor(status: number, body: components['schemas']['OAuthError']) {
    super(
      status,
      body,
      `${status} ${body.error}${body.error_description ? `: ${body.error_description}` : ''}`,
    );
    this.name = 'OAuthError';
    this.error = body.error;
    this.description = body.error_description;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The error an answer outside 2xx stands for, by the shape of its body. */
function toApiError(response: Response, body: unknown): ApiError {
  if (isObject(body) && typeof body.code === 'string' && typeof body.detail === 'string') {
    return new ProblemError(body as unknown as Problem);
  }
  if (isObject(body) && typeof body.error === 'string') {
    return new OAuthError(response.status, body as unknown as components['schemas']['OAuthError']);
  }
  return new ApiError(response.status, body, `${response.status} ${response.statusText}`.trim());
}

/** What a successful answer carries: its body, or `undefined` for a body-less one (204). */
type Data<R> = R extends { data: infer D }
  ? [Exclude<D, undefined>] extends [never]
    ? undefined
    : D
  : never;

/**
 * The typed body of a successful answer, or a thrown `ProblemError` / `OAuthError` / `ApiError`.
 * openapi-fetch itself never throws on a status; this makes the error path impossible to forget.
 */
export async function unwrap<R extends { data?: unknown; error?: unknown; response: Response }>(
  request: Promise<R>,
): Promise<Data<R>> {
  const { data, error, response } = await request;
  if (!response.ok) throw toApiError(response, error);
  return data as Data<R>;
}
