-- The aggregation expression language's helpers (db/query/expr.ts): values are jsonb, and SQL NULL
-- is a missing value, which MongoDB tells apart from null.

-- A field path as MongoDB's expressions walk it: a document gives its field; an array gives the
-- path from each element that is a document or an array, collected (elements that are neither,
-- and elements where the path is missing, give nothing); numeric segments name fields only.
create function mdb.expr_get(v jsonb, path text[]) returns jsonb
language plpgsql immutable strict parallel safe as $$
declare
  t text := jsonb_typeof(v);
  out jsonb;
  e jsonb;
  r jsonb;
begin
  if cardinality(path) = 0 then
    return v;
  elsif t = 'object' then
    return mdb.expr_get(v -> path[1], path[2:]);
  elsif t = 'array' then
    out := '[]'::jsonb;
    for e in select value from jsonb_array_elements(v) loop
      if jsonb_typeof(e) in ('object', 'array') then
        r := mdb.expr_get(e, path);
        if r is not null then
          out := out || jsonb_build_array(r);
        end if;
      end if;
    end loop;
    return out;
  end if;
  return null;
end
$$;
