-- A guarded read names its collection's catalog version as a type (an empty enum),
-- mdb."catalog_<id>_<version>", in a cast the planner folds away: `(null::mdb."catalog_1_6") is
-- null`. The type exists exactly while that version is current, so a statement compiled from a
-- stale catalog entry fails to parse (SQLSTATE 42704) and the catalog cache retries it with a fresh
-- entry. mdb.assert_catalog checked the same by reading the collection's row in every guarded
-- statement, which cost PostgreSQL about a third more CPU per indexed count than the statement
-- alone (pgbench); looking the type up costs a few percent (a domain, whose constraints the planner
-- also looks up, cost three times that).
create function mdb.catalog_marker(cid bigint, version bigint) returns text
  language sql immutable as $$ select format('mdb.%I', 'catalog_' || cid || '_' || version) $$;

create function mdb.sync_catalog_marker() returns trigger language plpgsql as $$
begin
  if tg_op in ('UPDATE', 'DELETE') then
    execute 'drop type if exists ' || mdb.catalog_marker(old.id, old.catalog_version);
  end if;
  if tg_op in ('INSERT', 'UPDATE') then
    execute 'create type ' || mdb.catalog_marker(new.id, new.catalog_version) || ' as enum ()';
  end if;
  return null;
end $$;

create trigger collections_catalog_marker
  after insert or delete or update of catalog_version on collections
  for each row execute function mdb.sync_catalog_marker();

do $$
declare
  c record;
begin
  for c in select id, catalog_version from collections loop
    execute 'create type ' || mdb.catalog_marker(c.id, c.catalog_version) || ' as enum ()';
  end loop;
end $$;

-- mdb.assert_catalog stays for processes of the previous version still running against this database.
