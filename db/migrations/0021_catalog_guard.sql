-- The catalog guard without DDL (issue 34). Migration 0008 named a collection's catalog version as
-- a type that a trigger on `collections` created and dropped on every version change, so a data
-- write that turned an index multikey did DDL in its own statement: with Citus, DDL runs on every
-- node and such a write failed while any node was down. And a prepared statement keeps a dropped
-- type (it is never parsed again), so the marker could not guard prepared statements.
--
-- The guard reads the version instead, in a sub-select of the statement itself, carried by the
-- statement's LIMIT (db/collections.ts guardedLimit):
--   limit (case when (exists (select from collections where id = <cid> and catalog_version = <version>)
--                     or mdb.stale_catalog(<cid>)) then <count> end)
-- A Limit node evaluates its count once per execution, before it reads its input, with the
-- statement's own snapshot, which PostgreSQL takes after the executor has locked the statement's
-- tables (also for a prepared statement: its locks are taken when its plan is fetched, before the
-- portal's snapshot). A write that waited behind an index build therefore sees the version the
-- build committed and fails (SQLSTATE WP001, the code of mdb.assert_catalog) rather than write an
-- array the new index would not know of; the catalog cache runs it again. Not a condition of the
-- WHERE: a planner that proves the WHERE false drops the scan with all its conditions (PostgreSQL 17
-- does for two equalities of one key column with different constants, a proof that holds only
-- while the index is not multikey). mdb.stale_catalog only raises, and is VOLATILE: the planner
-- evaluates a LIMIT's stable functions to estimate it, and would raise while planning.
--
-- The markers go: the trigger, its function and every existing marker type. A process of the
-- previous version still running against this database then fails its guarded statements (42704,
-- which it retries and answers 503) until it is replaced. Keeping the types without the trigger
-- would let such a process run with a stale catalog unnoticed once an index changes, and write
-- arrays that a new index would not know of: a loud failure during the rollout is the lesser harm.
-- Replace old processes before or right after applying this migration.
drop trigger collections_catalog_marker on collections;
drop function mdb.sync_catalog_marker();

do $$
declare
  t record;
begin
  for t in select typname from pg_type
           where typnamespace = 'mdb'::regnamespace and typname ~ '^catalog_[0-9]+_[0-9]+$' loop
    execute format('drop type mdb.%I', t.typname);
  end loop;
end $$;

drop function mdb.catalog_marker(bigint, bigint);

create function mdb.stale_catalog(cid bigint) returns boolean
  language plpgsql volatile as $$
begin
  raise exception 'the catalog of collection % changed', cid using errcode = 'WP001';
end $$;
