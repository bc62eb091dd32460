/**
 * A browser without JavaScript for the OpenID Provider's pages: fetch, a cookie jar and form
 * helpers. The tests (test/helpers/oidc-flow.ts) and the benchmark both sign in with it, so it
 * lives outside test/ and uses no test framework.
 */

/** A cookie jar for one browser: enough of RFC 6265 for one host. */
export class CookieJar {
  readonly cookies = new Map<string, { value: string; path: string; secure: boolean }>();

  store(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';').map((s) => s.trim());
      const eq = (pair ?? '').indexOf('=');
      const name = (pair ?? '').slice(0, eq);
      const value = (pair ?? '').slice(eq + 1);
      const attr = Object.fromEntries(
        attributes.map((a) => {
          const i = a.indexOf('=');
          return i < 0 ? [a.toLowerCase(), ''] : [a.slice(0, i).toLowerCase(), a.slice(i + 1)];
        }),
      );
      const expired =
        attr['max-age'] === '0' || (attr.expires !== undefined && Date.parse(attr.expires) < Date.now());
      if (expired || value === '') this.cookies.delete(name);
      else this.cookies.set(name, { value, path: attr.path ?? '/', secure: 'secure' in attr });
    }
  }

  header(url: string): string {
    const { pathname: path, protocol } = new URL(url);
    return [...this.cookies]
      .filter(([, c]) => !c.secure || protocol === 'https:')
      .filter(([, c]) => path === c.path || path.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`))
      .map(([name, c]) => `${name}=${c.value}`)
      .join('; ');
  }
}

/** A browser without JavaScript: fetch with a cookie jar, never following redirects by itself. */
export class Browser {
  readonly jar = new CookieJar();

  /** `fetchImpl`: another fetch, such as one that trusts a test certificate. */
  constructor(private readonly fetchImpl: typeof fetch = fetch) {}

  async request(
    url: string,
    init: { method?: string; form?: Record<string, string> } = {},
  ): Promise<Response> {
    const headers: Record<string, string> = {};
    const cookie = this.jar.header(url);
    if (cookie) headers.cookie = cookie;
    let body: string | undefined;
    if (init.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(init.form).toString();
    }
    const res = await this.fetchImpl(url, {
      method: init.method ?? (body ? 'POST' : 'GET'),
      headers,
      body,
      redirect: 'manual',
    });
    this.jar.store(res);
    return res;
  }

  /** Follows redirects until one leaves the server (returned as a URL) or a page is served. */
  async follow(start: string, base: string): Promise<{ page?: Response; left?: URL; url: string }> {
    let url = start;
    const outside = (u: URL) => u.origin !== new URL(base).origin || !u.pathname.startsWith('/oidc/');
    if (outside(new URL(start))) return { left: new URL(start), url: start };
    for (let i = 0; i < 20; i++) {
      const res = await this.request(url);
      const location = res.headers.get('location');
      if (process.env.DEBUG_FLOW) console.log(res.status, url, '->', location);
      if (res.status < 300 || res.status >= 400 || !location) return { page: res, url };
      const next = new URL(location, url);
      if (outside(next)) return { left: next, url };
      url = next.href;
    }
    throw new Error('too many redirects');
  }
}

/** The action of the first form of an HTML page. */
export function formAction(html: string, pageUrl: string): string {
  const m = /<form[^>]*action="([^"]+)"/.exec(html);
  if (!m?.[1]) throw new Error(`no form on the page:\n${html.slice(0, 500)}`);
  return new URL(m[1].replace(/&amp;/g, '&'), pageUrl).href;
}

/** Hidden inputs of a form (the provider's logout form carries its xsrf token so). */
export function hiddenInputs(html: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of html.matchAll(/<input[^>]*type="hidden"[^>]*>/g)) {
    const name = /name="([^"]+)"/.exec(m[0])?.[1];
    const value = /value="([^"]*)"/.exec(m[0])?.[1];
    if (name) out[name] = value ?? '';
  }
  return out;
}
