-- Data storage: a catalog of collections and indexes, and the functions that give JSON values
-- MongoDB's (BSON) order. Each collection is a table wp_<workplace id>.c_<collection id>
-- (id bytea primary key, doc jsonb not null); id is mdb.key(doc->'_id').

create table collections (
  id bigint generated always as identity primary key,
  workplace_id bigint not null references workplaces (id) on delete cascade,
  name text not null check (name ~ '^[A-Za-z]{1,64}$'),
  created_at timestamptz not null default now()
);
create unique index collections_name_key on collections (workplace_id, name);
create unique index collections_name_lower_key on collections (workplace_id, lower(name));

-- An index's `key` is the list of [path, direction] pairs as the user declared them. Each field
-- gets generated columns on the collection table: i<id>_<n>_a (ascending key), i<id>_<n>_d
-- (descending key) and i<id>_<n>_m (the path crosses an array), all named from catalog ids.
-- `multikey` turns true, for good, once a document whose indexed path crosses an array is
-- written (as MongoDB marks its indexes); until then queries need not look for such documents.
create table collection_indexes (
  id bigint generated always as identity primary key,
  collection_id bigint not null references collections (id) on delete cascade,
  name text not null,
  key jsonb not null,
  is_unique boolean not null default false,
  multikey boolean not null default false,
  created_at timestamptz not null default now()
);
create unique index collection_indexes_name_key on collection_indexes (collection_id, name);

create schema mdb;

-- These are PL/pgSQL rather than SQL functions: PostgreSQL re-plans a non-inlined SQL function
-- body for every row of a generated column, which cost ~100 ms a row here; PL/pgSQL keeps its plans.

-- float8 bits rearranged so that unsigned byte order is numeric order (-0 is 0).
create function mdb.f8key(x float8) returns bytea
language plpgsql immutable strict parallel safe as $$
declare
  i int8 := ('x' || encode(float8send(x + 0.0::float8), 'hex'))::bit(64)::int8;
begin
  return int8send(case when i >= 0 then i # (-9223372036854775808)::int8 else ~i end);
end
$$;

-- The BSON-order key of one JSON value: the type bracket first (null < numbers < strings < objects
-- < arrays < booleans), then the value; strings compare bytewise. SQL NULL (missing) keys as null.
-- jsonb numbers are arbitrary precision; keys use float8 (MongoDB's double), clamped at the ends.
create function mdb.key(v jsonb) returns bytea
language plpgsql immutable parallel safe as $$
declare
  t text := jsonb_typeof(v);
  n numeric;
begin
  if t = 'number' then
    n := v::numeric;
    return '\x14'::bytea || mdb.f8key(case
      when n > 1.7976931348623157e308 then 'Infinity'::float8
      when n < -1.7976931348623157e308 then '-Infinity'::float8
      when abs(n) < 2.2250738585072014e-308 then 0::float8
      else n::float8 end);
  elsif t = 'string' then
    return '\x1e'::bytea || convert_to(v #>> '{}', 'UTF8');
  elsif t = 'object' then
    return '\x28'::bytea || convert_to(v::text, 'UTF8');
  elsif t = 'array' then
    return '\x32'::bytea || convert_to(v::text, 'UTF8');
  elsif t = 'boolean' then
    return case when v = 'true'::jsonb then '\x3c01'::bytea else '\x3c00'::bytea end;
  end if;
  return '\x0a'::bytea;
end
$$;

-- The key a document sorts by on a path (given as its jsonpath alternatives): MongoDB sorts an
-- array by its smallest element ascending (dir 1) and its largest descending (dir -1), an empty
-- array before null, and a missing field as null, also inside an array of documents (`missing`
-- is true when some object on the way lacks the next field). Keys are cut at 1,024 bytes so they
-- fit a btree.
create function mdb.sort_key(doc jsonb, navs jsonpath[], dir int, missing jsonpath) returns bytea
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

-- Every key a document has on a path, for documents whose path crosses an array: each value, each
-- element of an array value and the array itself, and null when an object on the way lacks the
-- field. A GIN index over these serves equality and $in on multikey paths, as MongoDB's multikey
-- indexes do.
create function mdb.element_keys(doc jsonb, navs jsonpath[], missing jsonpath) returns bytea[]
language plpgsql immutable parallel safe as $$
declare
  p jsonpath;
  vals jsonb;
  v jsonb;
  keys bytea[] := '{}';
  i int;
  j int;
begin
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

-- Adds the generated key columns and btrees of one index to a collection table. Names and paths
-- arrive as parameters and are quoted here by format(), so no request text is spliced into SQL.
create function mdb.add_index_field(
  tbl regclass, col_prefix text, navs jsonpath[], missing jsonpath, multikey jsonpath)
returns void language plpgsql as $$
begin
  if col_prefix !~ '^i[0-9]+_[0-9]+$' then
    raise exception 'bad column prefix %', col_prefix;
  end if;
  execute format(
    'alter table %s add column %I bytea generated always as (mdb.sort_key(doc, %L::jsonpath[], 1, %L)) stored,'
    ' add column %I bytea generated always as (mdb.sort_key(doc, %L::jsonpath[], -1, %L)) stored,'
    ' add column %I boolean generated always as (coalesce(jsonb_path_match(doc, %L::jsonpath), false)) stored,'
    ' add column %I bytea[] generated always as (case when jsonb_path_match(doc, %L::jsonpath)'
    '   then mdb.element_keys(doc, %L::jsonpath[], %L) end) stored',
    tbl, col_prefix || '_a', navs, missing, col_prefix || '_d', navs, missing, col_prefix || '_m', multikey,
    col_prefix || '_k', multikey, navs, missing);
end
$$;
