-- A version per collection, bumped whenever what the query compiler builds on changes: an index
-- created or dropped, or an index becoming multikey. A process may then cache a collection's
-- catalog entry and guard each read with mdb.assert_catalog: a stale entry fails the statement
-- (SQLSTATE WP001) instead of compiling SQL for indexes that no longer look that way.
alter table collections add column catalog_version bigint not null default 0;

create function mdb.bump_catalog_version() returns trigger language plpgsql as $$
begin
  update collections set catalog_version = catalog_version + 1
  where id = case when tg_op = 'DELETE' then old.collection_id else new.collection_id end;
  return null;
end $$;

create trigger collection_indexes_version
  after insert or update or delete on collection_indexes
  for each row execute function mdb.bump_catalog_version();

create function mdb.assert_catalog(cid bigint, version bigint) returns boolean
  language plpgsql stable as $$
begin
  if not exists (select 1 from collections where id = cid and catalog_version = version) then
    raise exception 'the catalog of collection % changed', cid using errcode = 'WP001';
  end if;
  return true;
end $$;
