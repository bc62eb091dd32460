-- OIDC clients registered through the interface's /oidc routes. client_id is random and global
-- (an OAuth client_id names one client everywhere), but every lookup is scoped by workplace.
-- Secrets are 256 random bits, so a plain SHA-256 keeps a leaked table useless without the
-- stretching that low-entropy passwords need; the clear secret is shown once and never stored.
create table oidc_clients (
  client_id text primary key check (client_id ~ '^[A-Za-z0-9_-]{16,128}$'),
  workplace_id bigint not null references workplaces (id) on delete cascade,
  secret_hash bytea not null check (octet_length(secret_hash) = 32),
  -- The normalised metadata as the API returns it (without client_id, issued_at and secret).
  metadata jsonb not null check (jsonb_typeof(metadata) = 'object'),
  issued_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index oidc_clients_by_workplace on oidc_clients (workplace_id, issued_at, client_id);
