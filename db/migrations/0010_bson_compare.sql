-- MongoDB's order of embedded documents and arrays, for filters comparing with one ($gt: [2],
-- $lt: {"x": 1}). mdb.key (0002) orders them by their JSON text, and its keys are stored (index
-- columns, every collection's id), so they keep that order; this key is computed when a filter
-- compares, and stored nowhere.
--
-- Bytewise order of these keys is BSON's: the type bracket first (mdb.key's bytes), then the value.
-- A document is its fields in turn, each the value's bracket, the field name, a 0 byte and the
-- value, then a 0 byte: the value's type before the name, the name before the value, a prefix
-- first (0 is below every bracket). An array is its elements in turn, then a 0 byte. Strings end
-- with a 0 byte, so "a" comes before "ab" also inside a document; JSONB refuses \u0000, so no
-- name or string holds one. Fields come in JSONB's order of keys (shorter names first, then
-- bytewise), not the order they were written in: JSONB does not keep it.
create function mdb.bson_key(v jsonb) returns bytea
language plpgsql immutable strict parallel safe as $$
declare
  t text := jsonb_typeof(v);
  k bytea;
  out bytea;
  f record;
  e jsonb;
begin
  if t = 'object' then
    out := '\x28'::bytea;
    for f in select key, value from jsonb_each(v) loop
      k := mdb.bson_key(f.value);
      out := out || substr(k, 1, 1) || convert_to(f.key, 'UTF8') || '\x00'::bytea || substr(k, 2);
    end loop;
    return out || '\x00'::bytea;
  elsif t = 'array' then
    out := '\x32'::bytea;
    for e in select value from jsonb_array_elements(v) loop
      out := out || mdb.bson_key(e);
    end loop;
    return out || '\x00'::bytea;
  elsif t = 'string' then
    return '\x1e'::bytea || convert_to(v #>> '{}', 'UTF8') || '\x00'::bytea;
  end if;
  -- null, numbers and booleans: mdb.key's keys have a fixed length.
  return mdb.key(v);
end
$$;
