/** What a unique violation (SQLSTATE 23505) on a collection table collided on. */
export type UniqueViolation =
  | { on: 'id' }
  | { on: 'index'; indexId: string }
  /** A constraint this code does not name, or no name at all. */
  | { on: 'unknown' };

/*
 * A collection table's keys are named `c_<collection id>_pkey` (`_id`) and `x<index id>_u` (unique
 * indexes, db/storage/catalog.ts). Citus names a shard's copy of a table or index after it with the
 * shard id appended (`x12_u_102009`, `c_7_pkey_102008`), and a violation raised on a worker reaches
 * the coordinator's client without `constraint_name`, so the name is also looked for in the
 * message, which PostgreSQL writes in every locale with the constraint's name in it and nothing
 * else from the request. The detail is never read: it holds the document's values, which could
 * spell one of these names.
 */
const KEY = String.raw`(?:c_\d+_pkey|x(\d+)_u)(?:_\d+)?`;
const WHOLE = new RegExp(`^${KEY}$`);
const IN_TEXT = new RegExp(`(?<![\\w$])${KEY}(?![\\w$])`);

function keyOf(m: RegExpExecArray | null): UniqueViolation | undefined {
  if (!m) return undefined;
  return m[1] === undefined ? { on: 'id' } : { on: 'index', indexId: m[1] };
}

/** Which key of a collection table a unique violation names: `constraint_name` when present, else the message. */
export function uniqueViolationOf(err: unknown): UniqueViolation {
  const { constraint_name: constraint, message } = err as { constraint_name?: unknown; message?: unknown };
  return (
    (typeof constraint === 'string' ? keyOf(WHOLE.exec(constraint)) : undefined) ??
    (typeof message === 'string' ? keyOf(IN_TEXT.exec(message)) : undefined) ?? { on: 'unknown' }
  );
}
