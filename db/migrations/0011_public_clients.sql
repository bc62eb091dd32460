-- Public clients (token_endpoint_auth_method "none", RFC 7591 section 2): they hold no secret,
-- so none is stored. Every other client keeps one: the metadata says which kind a row is.
alter table oidc_clients alter column secret_hash drop not null;
alter table oidc_clients add constraint oidc_clients_secret_by_kind check (
  (secret_hash is null) = (metadata->>'token_endpoint_auth_method' is not distinct from 'none')
);
-- Clients registered before the field existed are confidential, authenticating as they did.
update oidc_clients set metadata = metadata || '{"token_endpoint_auth_method": "client_secret_basic"}'
where not metadata ? 'token_endpoint_auth_method';
