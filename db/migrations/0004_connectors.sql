-- Connectors of a workplace. The connector is kept as `json`, not `jsonb`: it is only ever
-- returned whole, and `json` keeps the keys in the order they were sent, which is the order in
-- which a form built from a data mapping shows its fields.
create table connectors (
  id text primary key check (id ~ '^[0-9a-f-]{36}$'),
  workplace_id bigint not null references workplaces (id) on delete cascade,
  body json not null check (json_typeof(body) = 'object'),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index connectors_by_workplace on connectors (workplace_id, created_at, id);
