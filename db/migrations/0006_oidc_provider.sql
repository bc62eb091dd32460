-- State of each workplace's OpenID Provider (oidc-provider models: sessions, grants, interactions,
-- authorization codes, access and refresh tokens), so that a restart loses nothing and several
-- processes can serve one workplace. Clients are not here: they are oidc_clients.
create table oidc_payloads (
  workplace_id bigint not null references workplaces (id) on delete cascade,
  model text not null,
  id text not null,
  payload jsonb not null,
  grant_id text,
  uid text,
  user_code text,
  expires_at timestamptz,
  consumed_at timestamptz,
  primary key (workplace_id, model, id)
);
create index oidc_payloads_by_grant on oidc_payloads (workplace_id, grant_id) where grant_id is not null;
create index oidc_payloads_by_uid on oidc_payloads (workplace_id, uid) where uid is not null;
create index oidc_payloads_by_user_code on oidc_payloads (workplace_id, user_code) where user_code is not null;
create index oidc_payloads_expiry on oidc_payloads (expires_at) where expires_at is not null;

-- Signing keys per workplace (private JWKs), generated at first use. The newest unretired key
-- signs; retired keys stay published until what they signed has expired.
create table oidc_keys (
  id bigint generated always as identity primary key,
  workplace_id bigint not null references workplaces (id) on delete cascade,
  kid text not null unique,
  private_jwk jsonb not null,
  created_at timestamptz not null default now(),
  retired_at timestamptz
);
create index oidc_keys_by_workplace on oidc_keys (workplace_id, id);

-- The secret that signs the provider's cookies, per workplace.
alter table oidc_settings add column cookie_secret text;
