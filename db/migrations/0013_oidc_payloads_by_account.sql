-- A user's sessions, grants and tokens found by the account they belong to, for the routes that
-- list and end a user's sessions: without it, each lookup would read every row of the table.
create index oidc_payloads_by_account on oidc_payloads (workplace_id, (payload ->> 'accountId'))
  where (payload ->> 'accountId') is not null;
