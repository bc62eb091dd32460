-- The catalog: ordinary tables describing tenants. Each workplace's data lives in its own schema
-- (wp_<id>), named from the catalog id and never from request text.

create table workplaces (
  id bigint generated always as identity primary key,
  name text not null check (name ~ '^[A-Za-z]{1,64}$'),
  created_at timestamptz not null default now()
);
-- Lookups are by exact name; uniqueness ignores case so that "Acme" and "acme" cannot coexist.
create unique index workplaces_name_key on workplaces (name);
create unique index workplaces_name_lower_key on workplaces (lower(name));

-- Every workplace has OIDC settings from the moment it exists. The token is kept in clear text
-- because the interface returns it from GET .../oidc.
create table oidc_settings (
  workplace_id bigint primary key references workplaces (id) on delete cascade,
  collection text not null default 'users' check (collection ~ '^[A-Za-z]{1,64}$'),
  token text not null,
  token_timeout integer not null default 3600 check (token_timeout between 1 and 86400),
  id_token_timeout integer not null default 3600 check (id_token_timeout between 1 and 86400),
  refresh_timeout integer not null default 1209600 check (refresh_timeout between 1 and 31536000),
  session_timeout integer not null default 1209600 check (session_timeout between 1 and 31536000),
  updated_at timestamptz not null default now()
);

-- X-Auth-Token credentials. Only a SHA-256 hash of each secret is stored.
create table api_tokens (
  id uuid primary key default gen_random_uuid(),
  kind text not null check (kind in ('admin')),
  label text not null default '',
  prefix text not null,
  secret_hash bytea not null unique,
  created_at timestamptz not null default now(),
  revoked_at timestamptz
);
