-- The options an index was created with besides its key and uniqueness (partialFilterExpression,
-- sparse, expireAfterSeconds, a text index's language, …), as the request gave them: the listing
-- reports them back, and the data layer reads what it needs from them.
alter table collection_indexes add column options jsonb not null default '{}'::jsonb;
