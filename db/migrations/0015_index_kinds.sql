-- Index kinds (issue 33): partial and sparse indexes keep their btrees to the documents a predicate
-- column accepts, and TTL indexes keep each document's expiry date in a column a sweeper reads.
-- Column names come from catalog ids; predicates and paths arrive as parameters and are quoted by
-- format(), so no request text is spliced into DDL.

-- p<index id>: whether a document belongs to a partial or sparse index. A query names the column
-- when its filter implies the predicate (decided in db/query/index-predicate.ts), which lets the
-- planner prove the btrees' `where p<id>`. `vars` holds the predicate's jsonpath variables.
create function mdb.add_index_predicate(tbl regclass, index_id bigint, predicate jsonpath, vars jsonb)
returns void language plpgsql as $$
begin
  execute format(
    'alter table %s add column %I boolean generated always as'
    ' (coalesce(jsonb_path_match(doc, %L::jsonpath, %L::jsonb), false)) stored',
    tbl, 'p' || index_id, predicate, vars);
end
$$;

-- A JSON value as a date: an ISO 8601 (RFC 3339) string with a time zone, what $currentDate
-- writes, e.g. "2026-01-02T03:04:05.678Z" or "…+02:00". Anything else (numbers, strings without a
-- zone, impossible dates) is no date (null). Immutable although the cast is only stable: with an
-- explicit offset the instant does not depend on the session's TimeZone or DateStyle. The fields
-- are checked first, so the cast never raises and no exception block (a subtransaction) is needed.
create function mdb.date_instant(v jsonb) returns timestamptz
language plpgsql immutable parallel safe as $$
declare
  s text;
  m text[];
  y int;
  mo int;
  d int;
begin
  if jsonb_typeof(v) is distinct from 'string' then return null; end if;
  s := v #>> '{}';
  m := regexp_match(s,
    '^([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]{1,9})?([Zz]|[+-]([0-9]{2}):([0-9]{2}))$');
  if m is null then return null; end if;
  y := m[1]::int;
  mo := m[2]::int;
  d := m[3]::int;
  if y < 1 or mo < 1 or mo > 12 or d < 1 or m[4]::int > 23 or m[5]::int > 59 or m[6]::int > 59
     or coalesce(m[9]::int, 0) > 15 or coalesce(m[10]::int, 0) > 59 then
    return null;
  end if;
  if d > extract(day from make_date(y, mo, 1) + interval '1 month' - interval '1 day') then
    return null;
  end if;
  return s::timestamptz;
end
$$;

-- The earliest date a document holds on a path (given as its jsonpath alternatives), looking into
-- arrays one level as MongoDB's TTL monitor does; null when there is none.
create function mdb.earliest_date(doc jsonb, navs jsonpath[]) returns timestamptz
language plpgsql immutable parallel safe as $$
declare
  p jsonpath;
  vals jsonb;
  v jsonb;
  t timestamptz;
  best timestamptz;
  i int;
  j int;
begin
  foreach p in array navs loop
    vals := jsonb_path_query_array(doc, p);
    for i in 0 .. jsonb_array_length(vals) - 1 loop
      v := vals -> i;
      if jsonb_typeof(v) = 'array' then
        for j in 0 .. jsonb_array_length(v) - 1 loop
          t := mdb.date_instant(v -> j);
          if t < best or best is null then best := t; end if;
        end loop;
      else
        t := mdb.date_instant(v);
        if t < best or best is null then best := t; end if;
      end if;
    end loop;
  end loop;
  return best;
end
$$;

-- t<index id>: the date a TTL index counts from, for a btree the sweeper walks (db/ttl.ts).
create function mdb.add_index_expiry(tbl regclass, index_id bigint, navs jsonpath[])
returns void language plpgsql as $$
begin
  execute format(
    'alter table %s add column %I timestamptz generated always as (mdb.earliest_date(doc, %L::jsonpath[])) stored',
    tbl, 't' || index_id, navs);
end
$$;
