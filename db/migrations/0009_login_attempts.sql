-- Failed sign-ins on each workplace's OpenID Provider, per account, shared by every process
-- serving the workplace: kept in memory, N processes behind a balancer allowed N times the guesses.
-- `account` is 's:' and the user's subject when the login names one user, else 'l:' and the
-- lowercased login, so that e-mail and username share one count and unknown logins are counted
-- like real ones. A row lives until its window (or its lock, once set) is over; oidc/throttle.ts
-- holds the limits and deletes expired rows now and then.
create table login_attempts (
  workplace_id bigint not null references workplaces (id) on delete cascade,
  account text not null,
  failures integer not null check (failures > 0),
  window_start timestamptz not null,
  locked_until timestamptz,
  primary key (workplace_id, account)
);
create index login_attempts_window on login_attempts (window_start);
