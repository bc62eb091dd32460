-- One SQLSTATE for "MongoDB rejected the request while it ran": 22MQ0, as pipelines raise it
-- (0017). Expressions raised MQ400 for the same thing (0016). errors.ts declares every SQLSTATE
-- our SQL raises (SQLSTATE) and maps 22MQ0 to a 400 INVALID_QUERY carrying the message as it is.
-- Same signature and volatility as 0016's: only the code changes.
create or replace function mdb.expr_fail(message text) returns jsonb
language plpgsql volatile parallel safe as $$
begin
  raise exception using errcode = '22MQ0', message = message;
end
$$;
