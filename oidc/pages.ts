/**
 * The provider's HTML pages: sign-in, consent, sign-out and errors. Self-contained (inline CSS,
 * no scripts, fonts or images from elsewhere), labelled form fields, and every value escaped.
 */

/**
 * Headers of every page the provider serves, ours and oidc-provider's: never framed (no
 * clickjacking of the sign-in, consent or sign-out buttons), nothing loaded from elsewhere but the
 * client's logo. No form-action: browsers apply it to the redirects after a form post too, and the
 * sign-in ends in a redirect to the client's own URI. No page runs a script but oidc-provider's
 * form_post response, which appends its one inline script's hash to `script-src` (it does so only
 * where the directive exists); scriptHashesOnly then drops the 'none' beside it.
 */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'x-frame-options': 'DENY',
  'content-security-policy':
    "default-src 'none'; script-src 'none'; style-src 'unsafe-inline'; img-src https: http:; frame-ancestors 'none'",
};

/**
 * A policy whose `script-src` holds script hashes besides 'none' allows exactly those scripts:
 * 'none' must stand alone in a source list, and browsers disagree on a list that holds it and more.
 */
export function scriptHashesOnly(policy: string): string {
  return policy.replace(/script-src 'none'((?: 'sha256-[A-Za-z0-9+/=]+')+)/, 'script-src$1');
}

/** What each scope gives the application, in words the person asked to allow it understands. */
const SCOPE_WORDS: Record<string, string> = {
  openid: 'Know who you are when you sign in',
  profile:
    'Your profile: name, nickname, username, picture, website, gender, birthdate, time zone and locale',
  email: 'Your e-mail address and whether it is verified',
  phone: 'Your phone number and whether it is verified',
  address: 'Your postal address',
  roles: 'Your roles and groups',
  offline_access: 'Keep access while you are not using it (until you sign out or it expires)',
};

/** A scope in words; a scope the application defined itself is named as it is. */
export function describeScope(scope: string): string {
  // Own members only: a scope may be named like an object's (`constructor`, `__proto__`).
  return Object.hasOwn(SCOPE_WORDS, scope)
    ? (SCOPE_WORDS[scope] as string)
    : `Access named “${scope}”, defined by the application`;
}

export function escapeHtml(value: unknown): string {
  return String(value)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

const STYLE = `
*{box-sizing:border-box}
body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;background:#f4f5f7;color:#1d2330;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
main{width:100%;max-width:24rem;margin:1rem;padding:2rem;background:#fff;border-radius:12px;box-shadow:0 1px 3px rgba(0,0,0,.12),0 8px 24px rgba(0,0,0,.06)}
h1{font-size:1.35rem;margin:0 0 .25rem}
p{margin:.25rem 0 1rem;color:#4a5263}
.client{display:flex;align-items:center;gap:.75rem;margin-bottom:1.25rem}
.client img{width:48px;height:48px;object-fit:contain;border-radius:8px}
label{display:block;font-weight:600;margin:1rem 0 .35rem}
input[type=text],input[type=email],input[type=password]{width:100%;padding:.65rem .75rem;font:inherit;border:1px solid #b9bfcc;border-radius:8px}
input:focus,button:focus{outline:3px solid #8ab4ff;outline-offset:1px}
button{width:100%;margin-top:1.25rem;padding:.7rem;font:inherit;font-weight:600;color:#fff;background:#2456d3;border:0;border-radius:8px;cursor:pointer}
button.secondary{background:#fff;color:#2456d3;border:1px solid #2456d3;margin-top:.6rem}
.error{padding:.6rem .75rem;border-radius:8px;background:#fde8e8;color:#8a1c1c;margin-bottom:.5rem}
ul{padding-left:1.2rem;margin:.25rem 0 1rem}
footer{margin-top:1.5rem;font-size:.85rem;color:#5b6478}
footer a{color:#2456d3}
`;

export function page(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>`;
}

export interface ClientView {
  client_name?: string | undefined;
  logo_uri?: string | undefined;
  tos_uri?: string | undefined;
  policy_uri?: string | undefined;
  contacts?: string[] | undefined;
  client_id: string;
}

function clientHeader(client: ClientView): string {
  const name = client.client_name ?? client.client_id;
  const logo = client.logo_uri
    ? `<img src="${escapeHtml(client.logo_uri)}" alt="" referrerpolicy="no-referrer">`
    : '';
  return `<div class="client">${logo}<div><strong>${escapeHtml(name)}</strong></div></div>`;
}

function clientFooter(client: ClientView): string {
  const links = [
    client.tos_uri
      ? `<a href="${escapeHtml(client.tos_uri)}" rel="noopener noreferrer">Terms of use</a>`
      : '',
    client.policy_uri
      ? `<a href="${escapeHtml(client.policy_uri)}" rel="noopener noreferrer">Privacy policy</a>`
      : '',
  ].filter(Boolean);
  const contacts = client.contacts?.length
    ? `<div>Contact: ${escapeHtml(client.contacts.join(', '))}</div>`
    : '';
  return links.length || contacts ? `<footer>${links.join(' · ')}${contacts}</footer>` : '';
}

export function loginPage(o: { action: string; client: ClientView; login?: string; error?: string }): string {
  const error = o.error ? `<div class="error" role="alert">${escapeHtml(o.error)}</div>` : '';
  return page(
    'Sign in',
    `${clientHeader(o.client)}
<h1>Sign in</h1>
<p>to continue to ${escapeHtml(o.client.client_name ?? o.client.client_id)}</p>
${error}
<form method="post" action="${escapeHtml(o.action)}" autocomplete="on">
<label for="login">E-mail or username</label>
<input id="login" name="login" type="text" autocomplete="username" required autofocus value="${escapeHtml(o.login ?? '')}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>
${clientFooter(o.client)}`,
  );
}

/** `resources`: the APIs the access will be used at, when the client named any (RFC 8707). */
export function consentPage(o: {
  action: string;
  client: ClientView;
  scopes: string[];
  resources?: string[];
}): string {
  const items = o.scopes.map((s) => `<li>${escapeHtml(describeScope(s))}</li>`).join('');
  const at = o.resources?.length
    ? `<p>To be used at: ${o.resources.map((r) => `<code>${escapeHtml(r)}</code>`).join(', ')}</p>\n`
    : '';
  return page(
    'Allow access',
    `${clientHeader(o.client)}
<h1>Allow access?</h1>
<p>${escapeHtml(o.client.client_name ?? o.client.client_id)} asks for:</p>
<ul>${items}</ul>
${at}<form method="post" action="${escapeHtml(o.action)}">
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</form>
${clientFooter(o.client)}`,
  );
}

/** `application`: the name of the client that asked for the sign-out, when it has one. */
export function logoutPage(form: string, application: string | undefined): string {
  const question = application
    ? `Do you want to sign out of ${escapeHtml(application)}?`
    : 'Do you want to sign out?';
  return page(
    'Sign out',
    `<h1>Sign out?</h1>
<p>${question}</p>
${form}
<button type="submit" form="op.logoutForm" name="logout" value="yes" autofocus>Yes, sign me out</button>
<button type="submit" form="op.logoutForm" class="secondary">No, stay signed in</button>`,
  );
}

export function messagePage(title: string, message: string): string {
  return page(title, `<h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>`);
}
