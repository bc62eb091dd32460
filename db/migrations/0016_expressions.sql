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

-- Operators (db/query/expr-sql.ts). Each takes its operands as jsonb (SQL NULL = missing) and
-- gives jsonb. Those that can raise MongoDB's errors are volatile: PostgreSQL folds immutable and
-- stable calls on constants while planning, which would raise an error that `$cond` or `$switch`
-- never reaches at run time. Errors are SQLSTATE MQ400, which errors.ts maps to INVALID_QUERY.
create function mdb.expr_fail(message text) returns jsonb
language plpgsql volatile parallel safe as $$
begin
  raise exception using errcode = 'MQ400', message = message;
end
$$;

-- The type names of `$type` and of MongoDB's messages: one JSON number is `int` where it is an
-- integer of 32 bits, `double` otherwise (as the `$type` query operator decides).
create function mdb.expr_type(v jsonb) returns text
language plpgsql immutable parallel safe as $$
declare
  t text := jsonb_typeof(v);
  n numeric;
begin
  if v is null then
    return 'missing';
  elsif t = 'number' then
    n := v::numeric;
    if n = trunc(n) and n between -2147483648 and 2147483647 then
      return 'int';
    end if;
    return 'double';
  elsif t = 'boolean' then
    return 'bool';
  end if;
  return t;
end
$$;

-- BSON's order of any two values, missing below everything (MongoDB's expressions compare
-- across types, without the query language's type brackets).
create function mdb.expr_cmp(a jsonb, b jsonb) returns int
language plpgsql immutable parallel safe as $$
declare
  ka bytea;
  kb bytea;
begin
  if a is null or b is null then
    return case when a is null and b is null then 0 when a is null then -1 else 1 end;
  end if;
  if jsonb_typeof(a) = 'number' and jsonb_typeof(b) = 'number' then
    return sign(a::numeric - b::numeric)::int;
  end if;
  ka := mdb.bson_key(a);
  kb := mdb.bson_key(b);
  return case when ka < kb then -1 when ka > kb then 1 else 0 end;
end
$$;

-- A double as jsonb, refused where JSON has no form for it (MongoDB would give Infinity or NaN).
create function mdb.expr_double(op text, r float8) returns jsonb
language plpgsql volatile parallel safe as $$
begin
  if r = 'Infinity'::float8 or r = '-Infinity'::float8 or r = 'NaN'::float8 then
    return mdb.expr_fail(op || ' gave a result that is not a finite number, which JSON cannot represent');
  end if;
  return to_jsonb(r);
end
$$;

-- x + y, x - y, x * y, x / y in doubles, as MongoDB (and JavaScript) compute them. PostgreSQL
-- raises where a double overflows to Infinity or underflows to 0; near those bounds the exact
-- result (numeric) decides first: beyond a double is our error, below the smallest is 0.
create function mdb.expr_float(op text, fn text, x float8, y float8) returns jsonb
language plpgsql volatile parallel safe as $$
declare
  exact numeric;
begin
  if fn in ('+', '-') then
    if abs(x) > 8e307 or abs(y) > 8e307 then
      exact := case when fn = '+' then x::numeric + y::numeric else x::numeric - y::numeric end;
      if abs(exact) > 1.7976931348623157e308 then
        return mdb.expr_double(op, 'Infinity');
      end if;
    end if;
    return mdb.expr_double(op, case when fn = '+' then x + y else x - y end);
  end if;
  if x = 0 or (fn = '*' and y = 0) then
    return mdb.expr_double(op, 0);
  end if;
  if greatest(abs(x), abs(y)) > 1e150 or least(abs(x), abs(y)) < 1e-150 then
    exact := abs(case when fn = '*' then x::numeric * y::numeric else x::numeric / y::numeric end);
    if exact > 1.7976931348623157e308 then
      return mdb.expr_double(op, 'Infinity');
    elsif exact < 2.4703282292062328e-324 then
      return mdb.expr_double(op, 0);
    end if;
  end if;
  return mdb.expr_double(op, case when fn = '*' then x * y else x / y end);
end
$$;

-- $add and $multiply: the first null or missing operand makes the result null; a non-number
-- before it is an error.
create function mdb.expr_fold(op text, args jsonb[]) returns jsonb
language plpgsql volatile parallel safe as $$
declare
  a jsonb;
  y float8;
  acc float8 := case when op = '$add' then 0 else 1 end;
begin
  foreach a in array args loop
    if a is null or a = 'null'::jsonb then
      return 'null'::jsonb;
    elsif jsonb_typeof(a) <> 'number' then
      return mdb.expr_fail(op || ' only supports numeric' || case when op = '$add' then ' or date' else '' end
        || ' types, not ' || mdb.expr_type(a));
    end if;
    y := a::float8;
    -- Within these bounds nothing overflows or underflows: PostgreSQL's arithmetic, without a
    -- call of expr_float per operand (each plpgsql call costs more than the arithmetic).
    if op = '$add' and abs(acc) <= 8e307 and abs(y) <= 8e307 then
      acc := acc + y;
    elsif op = '$multiply' and (acc = 0 or y = 0
        or (greatest(abs(acc), abs(y)) <= 1e150 and least(abs(acc), abs(y)) >= 1e-150)) then
      acc := acc * y;
    else
      acc := mdb.expr_float(op, case when op = '$add' then '+' else '*' end, acc, y)::float8;
    end if;
  end loop;
  return to_jsonb(acc);
end
$$;

-- The two-operand arithmetic: $subtract, $divide, $mod, $pow.
create function mdb.expr_arith(op text, a jsonb, b jsonb) returns jsonb
language plpgsql volatile parallel safe as $$
declare
  x float8;
  y float8;
  e numeric;
begin
  if op in ('$divide', '$mod') then
    if jsonb_typeof(a) = 'number' and jsonb_typeof(b) = 'number' then
      null;
    elsif a is null or b is null or a = 'null'::jsonb or b = 'null'::jsonb then
      return 'null'::jsonb;
    else
      return mdb.expr_fail(op || ' only supports numeric types, not ' || mdb.expr_type(a) || ' and ' || mdb.expr_type(b));
    end if;
  else
    if a is null or b is null or a = 'null'::jsonb or b = 'null'::jsonb then
      return 'null'::jsonb;
    elsif op = '$subtract' and (jsonb_typeof(a) <> 'number' or jsonb_typeof(b) <> 'number') then
      return mdb.expr_fail('can''t $subtract ' || mdb.expr_type(b) || ' from ' || mdb.expr_type(a));
    elsif jsonb_typeof(a) <> 'number' then
      return mdb.expr_fail('$pow''s base must be numeric, not ' || mdb.expr_type(a));
    elsif jsonb_typeof(b) <> 'number' then
      return mdb.expr_fail('$pow''s exponent must be numeric, not ' || mdb.expr_type(b));
    end if;
  end if;
  x := a::float8;
  y := b::float8;
  -- The bounds of expr_fold's fast path.
  if op = '$subtract' then
    if abs(x) <= 8e307 and abs(y) <= 8e307 then
      return to_jsonb(x - y);
    end if;
    return mdb.expr_float(op, '-', x, y);
  elsif op = '$divide' then
    if y = 0 then
      return mdb.expr_fail('can''t $divide by zero');
    elsif x = 0 or (greatest(abs(x), abs(y)) <= 1e150 and least(abs(x), abs(y)) >= 1e-150) then
      return to_jsonb(x / y);
    end if;
    return mdb.expr_float(op, '/', x, y);
  elsif op = '$mod' then
    if y = 0 then
      return mdb.expr_fail('can''t $mod by zero');
    end if;
    -- On the numbers' decimal forms, exactly: see docs/storage.md, Expressions.
    return mdb.expr_double(op, (a::numeric % b::numeric)::float8);
  end if;
  -- $pow
  if x = 0 then
    if y < 0 then
      return mdb.expr_fail('$pow cannot take a base of 0 and a negative exponent');
    end if;
    return to_jsonb(case when y = 0 then 1 else 0 end);
  elsif x < 0 and y <> trunc(y) then
    return mdb.expr_double(op, 'NaN');
  end if;
  -- Beyond these PostgreSQL raises where a double overflows or underflows (see expr_float).
  e := y::numeric * ln(abs(x))::numeric;
  if e > 709.782712893384 then
    return mdb.expr_double(op, 'Infinity');
  elsif e <= -745.1332191019412 then
    return mdb.expr_double(op, 0);
  end if;
  return mdb.expr_double(op, power(x, y));
end
$$;

-- The one-operand arithmetic: $abs $ceil $floor $sqrt $exp $ln $log10.
create function mdb.expr_math(op text, a jsonb) returns jsonb
language plpgsql volatile parallel safe as $$
declare
  x float8;
begin
  if a is null or a = 'null'::jsonb then
    return 'null'::jsonb;
  elsif jsonb_typeof(a) <> 'number' then
    return mdb.expr_fail(op || ' only supports numeric types, not ' || mdb.expr_type(a));
  end if;
  x := a::float8;
  case op
    when '$abs' then return to_jsonb(abs(x));
    when '$ceil' then return to_jsonb(ceil(x));
    when '$floor' then return to_jsonb(floor(x));
    when '$sqrt' then
      if x < 0 then
        return mdb.expr_fail('$sqrt''s argument must be greater than or equal to 0');
      end if;
      return mdb.expr_double(op, sqrt(x));
    when '$exp' then
      if x > 709.782712893384 then
        return mdb.expr_double(op, 'Infinity');
      elsif x <= -745.1332191019412 then
        return mdb.expr_double(op, 0);
      end if;
      return mdb.expr_double(op, exp(x));
    else
      if x <= 0 then
        return mdb.expr_fail(op || '''s argument must be a positive number');
      end if;
      return mdb.expr_double(op, case when op = '$ln' then ln(x) else log(x) end);
  end case;
end
$$;

-- $round (half to even) and $trunc to a number of decimal places, on the number's decimal form
-- (exact in numeric: the power of ten is built from text, as `power` may round).
create function mdb.expr_round(op text, a jsonb, place jsonb) returns jsonb
language plpgsql volatile parallel safe as $$
declare
  p int;
  scaled numeric;
  r numeric;
begin
  if a is null or place is null or a = 'null'::jsonb or place = 'null'::jsonb then
    return 'null'::jsonb;
  elsif jsonb_typeof(a) <> 'number' then
    return mdb.expr_fail(op || ' only supports numeric types, not ' || mdb.expr_type(a));
  elsif jsonb_typeof(place) <> 'number' or place::numeric <> trunc(place::numeric) then
    return mdb.expr_fail(op || '''s place must be an integer, not ' || mdb.expr_type(place));
  elsif place::numeric < -20 or place::numeric > 100 then
    return mdb.expr_fail(op || '''s place must be between -20 and 100');
  end if;
  p := place::int;
  scaled := a::numeric * ('1e' || p)::numeric;
  if op = '$trunc' then
    r := trunc(scaled);
  else
    r := round(scaled);
    if abs(scaled - trunc(scaled)) = 0.5 and mod(r, 2) <> 0 then
      r := r - sign(scaled);
    end if;
  end if;
  return to_jsonb((r * ('1e' || -p)::numeric)::float8);
end
$$;

-- A value as the string operators read it ($toLower, $toUpper, $substrCP): null and missing are
-- '', a number its decimal form.
create function mdb.expr_string(op text, a jsonb) returns text
language plpgsql volatile parallel safe as $$
begin
  if a is null or a = 'null'::jsonb then
    return '';
  elsif jsonb_typeof(a) = 'string' then
    return a #>> '{}';
  elsif jsonb_typeof(a) = 'number' then
    return to_jsonb(a::float8)::text;
  end if;
  perform mdb.expr_fail(op || ': can''t convert from BSON type ' || mdb.expr_type(a) || ' to String');
  return null;
end
$$;

-- $concat: null if an operand is null or missing; a non-string before it is an error. A result is
-- at most 16 MiB (MongoDB's largest value): a few hundred parts doubling a long string would
-- otherwise build one of gigabytes.
create function mdb.expr_concat(args jsonb[]) returns jsonb
language plpgsql volatile parallel safe as $$
declare
  a jsonb;
  out text := '';
begin
  foreach a in array args loop
    if a is null or a = 'null'::jsonb then
      return 'null'::jsonb;
    elsif jsonb_typeof(a) <> 'string' then
      return mdb.expr_fail('$concat only supports strings, not ' || mdb.expr_type(a));
    end if;
    out := out || (a #>> '{}');
    if octet_length(out) > 16777216 then
      return mdb.expr_fail('$concat''s result would be larger than 16 MiB');
    end if;
  end loop;
  return to_jsonb(out);
end
$$;

-- The integer operands of $substrCP and $indexOfCP.
create function mdb.expr_int(message text, a jsonb) returns int
language plpgsql volatile parallel safe as $$
begin
  if jsonb_typeof(a) <> 'number' or a::numeric <> trunc(a::numeric)
     or a::numeric not between -2147483648 and 2147483647 then
    perform mdb.expr_fail(message || ', found: ' || mdb.expr_type(a));
  end if;
  return a::int;
end
$$;

create function mdb.expr_substr_cp(a jsonb, start jsonb, len jsonb) returns jsonb
language plpgsql volatile parallel safe as $$
declare
  s text := mdb.expr_string('$substrCP', a);
  i int := mdb.expr_int('$substrCP: the starting index must be an integer', start);
  n int := mdb.expr_int('$substrCP: the length must be an integer', len);
begin
  if i < 0 then
    return mdb.expr_fail('$substrCP: the starting index must be a nonnegative integer');
  elsif n < 0 then
    return mdb.expr_fail('$substrCP: the length must be a nonnegative integer');
  end if;
  return to_jsonb(substr(s, i + 1, n));
end
$$;

create function mdb.expr_index_of_cp(a jsonb, sub jsonb, start jsonb, stop jsonb) returns jsonb
language plpgsql volatile parallel safe as $$
declare
  s text;
  i int := 0;
  j int;
  pos int;
begin
  if a is null or a = 'null'::jsonb then
    return 'null'::jsonb;
  elsif jsonb_typeof(a) <> 'string' then
    return mdb.expr_fail('$indexOfCP requires a string as the first argument, found: ' || mdb.expr_type(a));
  elsif sub is null or jsonb_typeof(sub) <> 'string' then
    return mdb.expr_fail('$indexOfCP requires a string as the second argument, found: ' || mdb.expr_type(sub));
  end if;
  s := a #>> '{}';
  j := length(s);
  if start is not null then
    i := mdb.expr_int('$indexOfCP requires an integral starting index', start);
    if i < 0 then
      return mdb.expr_fail('$indexOfCP requires a nonnegative starting index');
    end if;
  end if;
  if stop is not null then
    j := mdb.expr_int('$indexOfCP requires an integral ending index', stop);
    if j < 0 then
      return mdb.expr_fail('$indexOfCP requires a nonnegative ending index');
    end if;
    j := least(j, length(s));
  end if;
  if i > j then
    return '-1'::jsonb;
  end if;
  pos := strpos(substr(s, i + 1, j - i), sub #>> '{}');
  return to_jsonb(case when pos = 0 then -1 else i + pos - 1 end);
end
$$;

create function mdb.expr_str_len_cp(a jsonb) returns jsonb
language plpgsql volatile parallel safe as $$
begin
  if jsonb_typeof(a) is distinct from 'string' then
    return mdb.expr_fail('$strLenCP requires a string argument, found: ' || mdb.expr_type(a));
  end if;
  return to_jsonb(length(a #>> '{}'));
end
$$;

-- $trim, $ltrim, $rtrim; without `chars` (not given: `given` false), MongoDB's whitespace (JSONB
-- holds no \u0000). MongoDB checks the input before `chars`.
create function mdb.expr_trim(op text, a jsonb, chars jsonb, given boolean) returns jsonb
language plpgsql volatile parallel safe as $$
declare
  s text;
  c text := E' \t\n\u000b\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000';
begin
  if a is null or a = 'null'::jsonb then
    return 'null'::jsonb;
  elsif jsonb_typeof(a) <> 'string' then
    return mdb.expr_fail(op || ' requires its input to be a string, not ' || mdb.expr_type(a));
  elsif given and (chars is null or chars = 'null'::jsonb) then
    return 'null'::jsonb;
  elsif given and jsonb_typeof(chars) <> 'string' then
    return mdb.expr_fail(op || ' requires ''chars'' to be a string, not ' || mdb.expr_type(chars));
  end if;
  s := a #>> '{}';
  if given then
    c := chars #>> '{}';
  end if;
  return to_jsonb(case op when '$ltrim' then ltrim(s, c) when '$rtrim' then rtrim(s, c) else btrim(s, c) end);
end
$$;

create function mdb.expr_split(a jsonb, sep jsonb) returns jsonb
language plpgsql volatile parallel safe as $$
begin
  if a is null or sep is null or a = 'null'::jsonb or sep = 'null'::jsonb then
    return 'null'::jsonb;
  elsif jsonb_typeof(a) <> 'string' then
    return mdb.expr_fail('$split requires an expression that evaluates to a string as a first argument, found: ' || mdb.expr_type(a));
  elsif jsonb_typeof(sep) <> 'string' then
    return mdb.expr_fail('$split requires an expression that evaluates to a string as a second argument, found: ' || mdb.expr_type(sep));
  elsif sep = '""'::jsonb then
    return mdb.expr_fail('$split requires a non-empty separator');
  elsif a = '""'::jsonb then
    return '[""]'::jsonb;
  end if;
  return to_jsonb(string_to_array(a #>> '{}', sep #>> '{}'));
end
$$;

-- $size and $isArray's neighbours: the array operators.
create function mdb.expr_size(a jsonb) returns jsonb
language plpgsql volatile parallel safe as $$
begin
  if jsonb_typeof(a) is distinct from 'array' then
    return mdb.expr_fail('The argument to $size must be an array, but was of type: ' || mdb.expr_type(a));
  end if;
  return to_jsonb(jsonb_array_length(a));
end
$$;

-- $arrayElemAt: a negative index counts from the end; out of range is missing.
create function mdb.expr_elem_at(a jsonb, i jsonb) returns jsonb
language plpgsql volatile parallel safe as $$
declare
  n int;
begin
  if a is null or i is null or a = 'null'::jsonb or i = 'null'::jsonb then
    return 'null'::jsonb;
  elsif jsonb_typeof(a) <> 'array' then
    return mdb.expr_fail('$arrayElemAt''s first argument must be an array, but is ' || mdb.expr_type(a));
  elsif jsonb_typeof(i) <> 'number' then
    return mdb.expr_fail('$arrayElemAt''s second argument must be a numeric value, but is ' || mdb.expr_type(i));
  end if;
  n := mdb.expr_int('$arrayElemAt''s second argument must be representable as a 32-bit integer', i);
  if n < 0 then
    n := jsonb_array_length(a) + n;
    if n < 0 then
      return null;
    end if;
  end if;
  return a -> n;
end
$$;

create function mdb.expr_in(v jsonb, a jsonb) returns jsonb
language plpgsql volatile parallel safe as $$
declare
  e jsonb;
begin
  if jsonb_typeof(a) is distinct from 'array' then
    return mdb.expr_fail('$in requires an array as a second argument, found: ' || mdb.expr_type(a));
  end if;
  for e in select value from jsonb_array_elements(a) loop
    if mdb.expr_cmp(v, e) = 0 then
      return 'true'::jsonb;
    end if;
  end loop;
  return 'false'::jsonb;
end
$$;

create function mdb.expr_concat_arrays(args jsonb[]) returns jsonb
language plpgsql volatile parallel safe as $$
declare
  a jsonb;
  out jsonb := '[]'::jsonb;
begin
  foreach a in array args loop
    if a is null or a = 'null'::jsonb then
      return 'null'::jsonb;
    elsif jsonb_typeof(a) <> 'array' then
      return mdb.expr_fail('$concatArrays only supports arrays, not ' || mdb.expr_type(a));
    end if;
    out := out || a;
  end loop;
  return out;
end
$$;
