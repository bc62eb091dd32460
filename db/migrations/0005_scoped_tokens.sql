-- Scoped X-Auth-Tokens: bound to workplaces, read or read-write, optionally expiring. As with the
-- admin token, only a SHA-256 of each 256-bit secret is stored (unique, and the lookup key).
alter table api_tokens drop constraint api_tokens_kind_check;
alter table api_tokens add constraint api_tokens_kind_check check (kind in ('admin', 'scoped'));
alter table api_tokens
  add column access text check (access in ('read', 'read_write')),
  add column expires_at timestamptz,
  add column last_used_at timestamptz;
alter table api_tokens add constraint api_tokens_scoped_access check ((kind = 'scoped') = (access is not null));

-- The scope. Bound to the workplace's id, not its name: a workplace deleted and created again
-- under the same name is a new tenant, which old tokens must not reach.
create table api_token_workplaces (
  token_id uuid not null references api_tokens (id) on delete cascade,
  workplace_id bigint not null references workplaces (id) on delete cascade,
  primary key (token_id, workplace_id)
);
create index api_token_workplaces_by_workplace on api_token_workplaces (workplace_id);
