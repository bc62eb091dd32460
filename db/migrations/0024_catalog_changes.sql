-- Catalog changes announced to every process (issue 44). Each process caches collections' catalog
-- entries (db/storage/catalog-cache.ts) and workplaces' OpenID Providers (oidc/provider.ts); an
-- entry another process made stale used to live on until it expired, so an index created through
-- one process served the others' reads only up to 10 s later. These triggers NOTIFY channel
-- wpa_catalog whenever a catalog row changes, and every process LISTENs to it and drops what the
-- change makes stale (db/storage/catalog-changes.ts).
--
-- Triggers rather than calls in the code that writes these rows, so that no path can forget one:
-- an index becoming multikey inside a data write (db/storage/plan.ts, trackingMultikey), a cascade,
-- or a statement added later. A NOTIFY is delivered when its transaction commits, and not at all
-- when it rolls back, which is what the caches need; identical ones of one transaction are
-- delivered once. The catalog tables are ordinary tables (with Citus, local tables of the
-- coordinator, where the listeners connect), so the triggers run where the change is committed.
--
-- Payloads are JSON, built from the rows' values (never SQL text):
--   {"kind": "collection", "workplace": w, "collection": c}   a collection's entry (its indexes
--                                                              included: mdb.bump_catalog_version,
--                                                              0007, updates the collection row)
--   {"kind": "oidc", "workplace": w}                          its OIDC settings or signing keys
--   {"kind": "workplace", "workplace": w}                     the workplace itself, and all of it
-- A row whose workplace is gone was deleted with it: the workplace's own announcement covers it.

create function mdb.announce_catalog_change(change_kind text, wid bigint, collection_name text)
returns void language plpgsql as $$
declare
  workplace_name text;
begin
  select w.name into workplace_name from workplaces w where w.id = wid;
  if workplace_name is null then return; end if;
  perform pg_notify('wpa_catalog', case
    when change_kind = 'collection' then
      json_build_object('kind', change_kind, 'workplace', workplace_name, 'collection', collection_name)
    else json_build_object('kind', change_kind, 'workplace', workplace_name) end::text);
end $$;

create function mdb.announce_workplace_change() returns trigger language plpgsql as $$
begin
  perform pg_notify('wpa_catalog', json_build_object('kind', 'workplace', 'workplace', old.name)::text);
  return null;
end $$;

-- Not on insert: nothing is cached of a workplace that did not exist.
create trigger workplaces_announce after update or delete on workplaces
  for each row execute function mdb.announce_workplace_change();

create function mdb.announce_collection_change() returns trigger language plpgsql as $$
begin
  perform mdb.announce_catalog_change('collection', old.workplace_id, old.name);
  return null;
end $$;

-- Every change of what a cached entry holds bumps the collection's catalog version (0007), an
-- update of this row. Not on insert: nothing is cached of a collection that did not exist.
create trigger collections_announce after update or delete on collections
  for each row execute function mdb.announce_collection_change();

create function mdb.announce_oidc_change() returns trigger language plpgsql as $$
begin
  if tg_op = 'DELETE' then
    perform mdb.announce_catalog_change('oidc', old.workplace_id, null);
  else
    perform mdb.announce_catalog_change('oidc', new.workplace_id, null);
  end if;
  return null;
end $$;

-- What a provider is built from (its keys, its cookie secret) the registry also compares on every
-- request, and a request reads the settings afresh: these announcements let every process drop a
-- provider built on what changed without waiting for its next request. Not announced: the settings
-- row's insert and delete (with the workplace, which announces itself), and the first key and the
-- cookie secret, written once before any provider of the workplace can be built (announcing them
-- would only make the process that wrote them build its first provider twice).
create trigger oidc_settings_announce after update on oidc_settings
  for each row when (old.cookie_secret is not null and old is distinct from new)
  execute function mdb.announce_oidc_change();

-- A rotation retires the keys in use (an update) in the transaction that adds the new one.
create trigger oidc_keys_announce after update or delete on oidc_keys
  for each row execute function mdb.announce_oidc_change();
