-- Issue 45: end users of a workplace reach its collections under rules, with the access tokens
-- its OpenID Provider issues.
--
-- The rules of a collection (what PUT .../rules stored, normalized: {read, create, update, delete,
-- fields}); null when it never had any, which refuses every end user. They are part of the
-- catalog entry a process caches, so replacing them bumps catalog_version (the handler does, in
-- the same UPDATE), which 0024's trigger announces and the catalog guard checks: a request runs
-- wholly under one version of the rules.
alter table collections add column rules jsonb;

-- A grant that ends, or a client that is deleted, stops the access tokens issued under it at once
-- on the data routes (oidc/access-tokens.ts), which keep the grants they found live in memory:
-- every process is told, and forgets what it kept of the workplace. A grant ends when its row is
-- deleted: a revocation, a sign-out without offline_access, the session administration routes,
-- or the purge of expired rows (announced too: harmless, and rarer than requests).
create function mdb.announce_grants_change() returns trigger language plpgsql as $$
begin
  perform mdb.announce_catalog_change('grants', old.workplace_id, null);
  return null;
end $$;

create trigger oidc_grants_announce after delete on oidc_payloads
  for each row when (old.model = 'Grant')
  execute function mdb.announce_grants_change();

create trigger oidc_clients_announce after delete on oidc_clients
  for each row execute function mdb.announce_grants_change();

-- Fails the statement that writes a document an end user may not write: a write and its rule's
-- check are one statement (db/storage/documents.ts), so a refusal writes nothing. Its message
-- names the rule, never a value.
--
-- Declared IMMUTABLE although it raises: Citus refuses VOLATILE and STABLE functions (with column
-- arguments) in the WHERE of a modification of a distributed table. It is only ever called, in a
-- CASE after the rule's test, on `doc`, a column of a function scan of the documents written, so
-- no plan-time folding (which needs constant arguments) can call it.
create function mdb.rule_refused(rule_kind text, doc jsonb) returns boolean
language plpgsql immutable as $$
begin
  raise exception 'The % rule refuses a document of this write', rule_kind using errcode = 'WP002';
end $$;

-- Origins whose browser pages may call the document routes with an end user's token (CORS),
-- besides the origins of the registered clients' redirect URIs (http/cors.ts).
alter table oidc_settings add column allowed_origins text[] not null default '{}';

-- A change of allowed_origins reaches every process's kept origins at once (0024's trigger on the
-- settings skips a workplace whose provider was never built).
create trigger oidc_settings_origins_announce after update of allowed_origins on oidc_settings
  for each row when (old.allowed_origins is distinct from new.allowed_origins)
  execute function mdb.announce_oidc_change();
