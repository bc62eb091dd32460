-- Text indexes (MongoDB's {"field": "text"}): one generated tsvector column per text index,
-- t<index id>, over the strings its fields hold, with a GIN index over it. The column's expression
-- is built by mdb.add_text_index from catalog ids and values passed through format(%L), never from
-- spliced request text. PL/pgSQL throughout, for the reason migration 0002 gives.

-- Case and diacritics aside, as MongoDB's version 3 text index compares: accents are split off
-- (NFD) and dropped; to_tsvector and lower() fold the case.
create function mdb.fold_text(t text) returns text
language plpgsql immutable strict parallel safe as $$
begin
  return regexp_replace(normalize(t, NFD), '[\u0300-\u036f]', '', 'g');
end
$$;

-- The strings the walks reach: a string, or the strings of an array the walk ends on (MongoDB
-- indexes each string of an array of strings).
create function mdb.text_strings(doc jsonb, navs jsonpath[]) returns text[]
language plpgsql immutable strict parallel safe as $$
declare
  out text[] := '{}';
  p jsonpath;
  v jsonb;
  e jsonb;
begin
  foreach p in array navs loop
    for v in select jsonb_path_query(doc, p) loop
      if jsonb_typeof(v) = 'string' then
        out := out || (v #>> '{}');
      elsif jsonb_typeof(v) = 'array' then
        for e in select jsonb_array_elements(v) loop
          if jsonb_typeof(e) = 'string' then out := out || (e #>> '{}'); end if;
        end loop;
      end if;
    end loop;
  end loop;
  return out;
end
$$;

-- The text search configuration a document is indexed with: the one its language override field
-- names (a key of `languages`, MongoDB's language names mapped to configurations), else the index's.
create function mdb.text_config(doc jsonb, override text, languages jsonb, fallback text) returns regconfig
language plpgsql immutable parallel safe as $$
declare
  lang jsonb := doc -> override;
begin
  if override is not null and jsonb_typeof(lang) = 'string' and languages ? lower(lang #>> '{}') then
    return (languages ->> lower(lang #>> '{}'))::regconfig;
  end if;
  return fallback::regconfig;
end
$$;

-- A tsvector of a text, cut (by halves) until it fits PostgreSQL's 1 MB limit on a tsvector: a
-- document is stored with the words that fit rather than refused. Only called on long texts: the
-- exception block makes a subtransaction.
create function mdb.text_vector_cut(cfg regconfig, t text, weight "char", base tsvector) returns tsvector
language plpgsql immutable parallel safe as $$
declare
  cut text := t;
begin
  loop
    begin
      return base || setweight(to_tsvector(cfg, cut), weight);
    exception when program_limit_exceeded then
      if cut = '' then return base; end if;
      cut := left(cut, length(cut) / 2);
    end;
  end loop;
end
$$;

-- The document's tsvector: `fields` is [[walks (jsonpath texts), weight letter A-D], ...].
create function mdb.text_vector(doc jsonb, fields jsonb, override text, languages jsonb, fallback text)
returns tsvector
language plpgsql immutable parallel safe as $$
declare
  cfg regconfig := mdb.text_config(doc, override, languages, fallback);
  out tsvector := ''::tsvector;
  f jsonb;
  t text;
  total int := 0;
begin
  for f in select jsonb_array_elements(fields) loop
    t := mdb.fold_text(array_to_string(mdb.text_strings(doc, array(
      select jsonb_array_elements_text(f -> 0)::jsonpath)), ' '));
    total := total + octet_length(t);
    -- A tsvector takes at most ~5 bytes per byte of text (one-letter words), so below this the
    -- 1 MB limit cannot be reached.
    if total < 200000 then
      out := out || setweight(to_tsvector(cfg, t), (f ->> 1)::"char");
    else
      out := mdb.text_vector_cut(cfg, t, (f ->> 1)::"char", out);
    end if;
  end loop;
  return out;
end
$$;

create function mdb.add_text_index(
  tbl regclass, col text, fields jsonb, override text, languages jsonb, fallback text)
returns void language plpgsql as $$
begin
  if col !~ '^t[0-9]+$' then
    raise exception 'bad text column name %', col;
  end if;
  -- Fails here, before any DDL, on a configuration the database does not have.
  perform fallback::regconfig;
  execute format(
    'alter table %s add column %I tsvector generated always as'
    ' (mdb.text_vector(doc, %L::jsonb, %L::text, %L::jsonb, %L::text)) stored',
    tbl, col, fields, override, languages, fallback);
  execute format('create index %I on %s using gin (%I) with (fastupdate = off)', 'x' || col, tbl, col);
end
$$;
