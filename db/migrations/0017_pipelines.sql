-- Helpers of aggregation pipelines (db/query/pipeline-sql.ts). Errors a pipeline meets while it
-- runs (a $replaceRoot that is not given a document, too many groups) are raised with SQLSTATE
-- 22MQ0, which the API answers as a 400 INVALID_QUERY carrying the message as it is. They are
-- volatile so that the planner never folds a call with constant arguments into an error raised
-- while planning, for rows that may never come; and parallel safe, since a parallel-unsafe
-- function anywhere in a statement keeps all of it from using parallel workers.

create function mdb.agg_error(message text) returns jsonb
language plpgsql volatile parallel safe as $$
begin
  raise exception using errcode = '22MQ0', message = message;
end
$$;

-- True, or the error `message` when `ok` is not: a limit checked inside the statement.
create function mdb.agg_check(ok boolean, message text) returns boolean
language plpgsql volatile parallel safe as $$
begin
  if ok is not true then
    raise exception using errcode = '22MQ0', message = message;
  end if;
  return true;
end
$$;

-- MongoDB's name of a value's type, for error messages.
create function mdb.agg_type_name(v jsonb) returns text
language sql immutable parallel safe as $$
  select case jsonb_typeof(v)
    when 'object' then 'object' when 'array' then 'array' when 'string' then 'string'
    when 'boolean' then 'bool' when 'null' then 'null'
    when 'number' then case when (v #>> '{}')::numeric = trunc((v #>> '{}')::numeric) then 'int' else 'double' end
    else 'missing' end
$$;

-- $replaceRoot's newRoot, which must be a document.
create function mdb.agg_new_root(v jsonb) returns jsonb
language plpgsql volatile parallel safe as $$
begin
  if jsonb_typeof(v) = 'object' then
    return v;
  end if;
  raise exception using errcode = '22MQ0', message = format(
    '''newRoot'' expression must evaluate to an object, but resulting value was: %s. Type of resulting value: ''%s''.',
    coalesce(left(v::text, 200), 'MISSING'), mdb.agg_type_name(v));
end
$$;

-- A projection of MongoDB's aggregation ($project, $addFields/$set, $unset, $lookup's `as`) over
-- one document. `spec` is a tree of field names: a leaf `true` keeps a field (mode 'include'),
-- `false` removes it (mode 'exclude'), `{"$v": i}` sets it to the i-th of `vals`, each `[]` for
-- a missing value (the field is then left out) or `[value]`; an inner node is an object of its
-- children, with `"$c": true` when some leaf below it is computed. As in MongoDB, a path goes
-- through arrays (into every element, nested arrays too), and a computed field under a scalar or
-- a missing field replaces it with a document; an inclusion drops scalars on the way.
create function mdb.agg_project(v jsonb, spec jsonb, vals jsonb, mode text) returns jsonb
language plpgsql immutable parallel safe as $$
declare
  f record;
  out jsonb := case when mode = 'include' then '{}'::jsonb else v end;
  x jsonb;
  r jsonb;
begin
  for f in select key, value from jsonb_each(spec) loop
    continue when f.key = '$c';
    if f.value = 'true'::jsonb then
      if v ? f.key then
        out := out || jsonb_build_object(f.key, v -> f.key);
      end if;
    elsif f.value = 'false'::jsonb then
      out := out - f.key;
    elsif f.value ? '$v' then
      x := vals -> ((f.value ->> '$v')::int);
      if jsonb_array_length(x) = 1 then
        out := out || jsonb_build_object(f.key, x -> 0);
      else
        out := out - f.key;
      end if;
    else
      r := mdb.agg_project_value(v -> f.key, f.value, vals, mode);
      if r is null then
        out := out - f.key;
      else
        out := out || jsonb_build_object(f.key, r);
      end if;
    end if;
  end loop;
  return out;
end
$$;

-- The projection of an inner node over the value found there (SQL NULL when missing); NULL means
-- the field is left out.
create function mdb.agg_project_value(x jsonb, node jsonb, vals jsonb, mode text) returns jsonb
language plpgsql immutable parallel safe as $$
declare
  t text := jsonb_typeof(x);
  out jsonb;
  e jsonb;
  r jsonb;
begin
  if t = 'object' then
    return mdb.agg_project(x, node, vals, mode);
  elsif t = 'array' then
    out := '[]'::jsonb;
    for e in select value from jsonb_array_elements(x) loop
      r := mdb.agg_project_value(e, node, vals, mode);
      if r is not null then
        out := out || jsonb_build_array(r);
      end if;
    end loop;
    return out;
  elsif node ? '$c' then
    return mdb.agg_project('{}'::jsonb, node, vals, mode);
  elsif mode = 'include' then
    return null;
  end if;
  return x;
end
$$;

-- A computed value as mdb.agg_project takes it: `[]` when missing (SQL NULL), else `[value]`.
create function mdb.agg_wrap(x jsonb) returns jsonb
language sql immutable parallel safe as $$
  select case when x is null then '[]'::jsonb else jsonb_build_array(x) end
$$;
