-- Citus (issue 42). Two shapes Citus plans differently from PostgreSQL:
--
-- 1. A statement whose WHERE the planner proves false (`$in: []`, two different equalities on one
--    key column) is routed to no shard: Citus runs it on the coordinator over an empty relation of
--    NULL columns, and constant-folds the immutable key functions of its select list and ORDER BY
--    with a NULL document. Those looped over `jsonb_array_length(NULL)` and raised "upper bound of
--    FOR loop cannot be null". A NULL document has no keys.
--
-- 2. Citus refuses an UPDATE or DELETE of a distributed table whose conditions call a function
--    that is not IMMUTABLE inside CASE or COALESCE ("non-IMMUTABLE functions are not allowed in
--    CASE or COALESCE statements"): it would evaluate it on the coordinator. `$expr` compiles its
--    boolean, integer and string results with to_jsonb, which is STABLE only because of its date and
--    time types (their text depends on DateStyle and TimeZone). For these three types its result
--    depends on nothing but the value, so these wrappers say IMMUTABLE truthfully.

create or replace function mdb.sort_key(doc jsonb, navs jsonpath[], dir int, missing jsonpath) returns bytea
language plpgsql immutable parallel safe as $$
declare
  p jsonpath;
  vals jsonb;
  v jsonb;
  k bytea;
  best bytea;
  i int;
  j int;
begin
  if doc is null then return null; end if;
  foreach p in array navs loop
    vals := jsonb_path_query_array(doc, p);
    for i in 0 .. jsonb_array_length(vals) - 1 loop
      v := vals -> i;
      if jsonb_typeof(v) <> 'array' then
        k := mdb.key(v);
        if best is null or (dir >= 0 and k < best) or (dir < 0 and k > best) then best := k; end if;
      elsif jsonb_array_length(v) = 0 then
        k := '\x05'::bytea;
        if best is null or (dir >= 0 and k < best) or (dir < 0 and k > best) then best := k; end if;
      else
        for j in 0 .. jsonb_array_length(v) - 1 loop
          k := mdb.key(v -> j);
          if best is null or (dir >= 0 and k < best) or (dir < 0 and k > best) then best := k; end if;
        end loop;
      end if;
    end loop;
  end loop;
  if missing is not null and best is not null and jsonb_path_match(doc, missing) then
    k := '\x0a'::bytea;
    if (dir >= 0 and k < best) or (dir < 0 and k > best) then best := k; end if;
  end if;
  return substr(coalesce(best, '\x0a'::bytea), 1, 1024);
end
$$;

create or replace function mdb.element_keys(doc jsonb, navs jsonpath[], missing jsonpath) returns bytea[]
language plpgsql immutable parallel safe as $$
declare
  p jsonpath;
  vals jsonb;
  v jsonb;
  keys bytea[] := '{}';
  i int;
  j int;
begin
  if doc is null then return null; end if;
  foreach p in array navs loop
    vals := jsonb_path_query_array(doc, p);
    for i in 0 .. jsonb_array_length(vals) - 1 loop
      v := vals -> i;
      keys := keys || substr(mdb.key(v), 1, 1024);
      if jsonb_typeof(v) = 'array' then
        for j in 0 .. jsonb_array_length(v) - 1 loop
          keys := keys || substr(mdb.key(v -> j), 1, 1024);
        end loop;
      end if;
    end loop;
  end loop;
  if cardinality(keys) = 0 or (missing is not null and jsonb_path_match(doc, missing)) then
    keys := keys || '\x0a'::bytea;
  end if;
  return keys;
end
$$;

create function mdb.jsonb_of(v boolean) returns jsonb
  language sql immutable parallel safe return to_jsonb(v);

create function mdb.jsonb_of(v int) returns jsonb
  language sql immutable parallel safe return to_jsonb(v);

create function mdb.jsonb_of(v text) returns jsonb
  language sql immutable parallel safe return to_jsonb(v);
