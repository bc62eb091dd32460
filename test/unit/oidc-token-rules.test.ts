import { describe, expect, it } from 'vitest';
import { userClaims } from '../../oidc/claims.js';
import { REGISTERED_SCOPE } from '../../oidc/extra-client-metadata.js';
import { checkResourceIndicator, introspectionAllowed, resourceIndicators } from '../../oidc/resources.js';

const NAMES = [
  'name',
  'email',
  'email_verified',
  'phone_number_verified',
  'updated_at',
  'address',
  'locale',
  'roles',
  'groups',
];

describe('userClaims: a claim is released only with its OpenID Connect / RFC 9068 type', () => {
  const cases: [string, Record<string, unknown>, Record<string, unknown>][] = [
    ['strings', { name: 'Ada', locale: 'en-GB' }, { name: 'Ada', locale: 'en-GB' }],
    ['a number for a string claim', { name: 7 }, {}],
    ['null', { name: null, email: null }, {}],
    [
      'booleans',
      { email_verified: true, phone_number_verified: false },
      { email_verified: true, phone_number_verified: false },
    ],
    ['a string for a boolean claim', { email_verified: 'true' }, {}],
    ['updated_at as seconds', { updated_at: 1700000000 }, { updated_at: 1700000000 }],
    ['updated_at as a string', { updated_at: '2024-01-01' }, {}],
    ['address as an object', { address: { country: 'UK' } }, { address: { country: 'UK' } }],
    ['address as a string or array', { address: 'London' }, {}],
    ['lists of strings', { roles: ['admin'], groups: [] }, { roles: ['admin'], groups: [] }],
    ['a single string for a list', { roles: 'admin' }, {}],
    ['a list holding a non-string', { roles: ['admin', 1], groups: ['eng', null] }, {}],
    ['an object for a list', { groups: { eng: true } }, {}],
    ['members not asked for', { nickname: 'ada', password: '$scrypt$...' }, {}],
    ['a `sub` member never replaces the subject', { sub: 'other' }, {}],
  ];
  it.each(cases)('%s', (_label, user, released) => {
    expect(userClaims(user as never, 'u-1', NAMES)).toEqual({ sub: 'u-1', ...released });
  });

  it('reads own members only', () => {
    expect(userClaims(JSON.parse('{"__proto__": {"name": "x"}}'), 'u-1', ['name', '__proto__'])).toEqual({
      sub: 'u-1',
    });
  });
});

describe('checkResourceIndicator', () => {
  const ISSUER = 'http://op.internal:3000/oidc/acme';
  const accepted = [
    'https://api.acme.example',
    'https://api.acme.example/orders',
    'https://api.acme.example:8443/v2/',
    'http://localhost:8080/api',
    'http://127.0.0.1/api',
    'http://[::1]:9000/',
    ISSUER,
  ];
  it.each(accepted)('accepts %s', (indicator) => {
    expect(() => checkResourceIndicator(indicator, ISSUER)).not.toThrow();
  });

  const refused: [string, RegExp][] = [
    ['http://api.acme.example', /https URL/],
    ['http://op.internal:3000/oidc/other', /https URL/],
    ['ftp://api.acme.example', /https URL/],
    ['urn:acme:api', /https URL/],
    ['api.acme.example', /absolute URI/],
    ['', /absolute URI/],
    ['https://api.acme.example/?tenant=1', /no query or fragment/],
    ['https://api.acme.example/#x', /no query or fragment/],
    ['https://api.acme.example/?', /no query or fragment/],
    ['https://ada:pw@api.acme.example', /user information/],
    ['https://ada@api.acme.example', /user information/],
  ];
  it.each(refused)('refuses %s', (indicator, message) => {
    try {
      checkResourceIndicator(indicator, ISSUER);
    } catch (err) {
      expect((err as { error?: string }).error).toBe('invalid_target');
      expect((err as { error_description?: string }).error_description).toMatch(message);
      return;
    }
    throw new Error(`${indicator} was accepted`);
  });
});

describe('what a resource server token may carry, and who may use client_credentials and introspection', () => {
  const ISSUER = 'https://op.example/oidc/acme';
  const info = resourceIndicators(ISSUER, () => 300);
  const client = (clientAuthMethod: string, registered: string) =>
    ({
      clientAuthMethod,
      scope: `openid profile email roles offline_access ${registered}`.trim(),
      metadata: () => ({ [REGISTERED_SCOPE]: registered }),
    }) as never;
  const ctx = (params: Record<string, string>) => ({ oidc: { params } }) as never;
  const get = (params: Record<string, string>, c: never) =>
    (info.getResourceServerInfo as unknown as (...a: unknown[]) => Promise<Record<string, unknown>>)(
      ctx(params),
      ISSUER,
      c,
    );

  it('a sign-in: the client may-ask scopes except openid and offline_access, as a JWT for token_timeout', async () => {
    expect(await get({}, client('client_secret_basic', 'orders:read'))).toEqual({
      audience: ISSUER,
      scope: 'profile email roles orders:read',
      accessTokenFormat: 'jwt',
      accessTokenTTL: 300,
      jwt: { sign: { alg: 'RS256' } },
    });
  });

  const cc: [string, string, string | RegExp][] = [
    ['orders:read orders:write offline_access', 'orders:read', 'orders:read orders:write'],
    ['orders:read', '', 'orders:read'],
    ['orders:read', 'orders:write', /invalid_scope/],
    ['orders:read', 'email', /invalid_scope/],
    ['orders:read openid', 'openid', /invalid_scope/],
    ['offline_access', 'offline_access', /invalid_scope/],
  ];
  it.each(cc)('client_credentials, registered %j, asking %j', async (registered, asked, expected) => {
    const answer = get(
      { grant_type: 'client_credentials', scope: asked },
      client('client_secret_basic', registered),
    );
    if (typeof expected === 'string') expect((await answer).scope).toBe(expected);
    else await expect(answer).rejects.toMatchObject({ error: expect.stringMatching(expected) });
  });

  it('client_credentials is refused to a client without a secret', async () => {
    await expect(
      get({ grant_type: 'client_credentials' }, client('none', 'orders:read')),
    ).rejects.toMatchObject({
      error: 'unauthorized_client',
    });
  });

  it('introspection: confidential clients only', async () => {
    expect(await introspectionAllowed(undefined, { clientAuthMethod: 'client_secret_post' })).toBe(true);
    expect(await introspectionAllowed(undefined, { clientAuthMethod: 'none' })).toBe(false);
  });

  it('the default resource is the issuer; of several granted, none is picked', async () => {
    const pick = info.defaultResource as (...a: unknown[]) => Promise<unknown>;
    expect(await pick(ctx({}), client('client_secret_basic', ''))).toBe(ISSUER);
    expect(
      await pick(ctx({}), client('client_secret_basic', ''), ['https://a.example', 'https://b.example']),
    ).toEqual(['https://a.example', 'https://b.example']);
  });
});
