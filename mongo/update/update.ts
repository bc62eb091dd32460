/**
 * MongoDB's update documents (update operators or a whole replacement) on JSON documents, as a pure
 * module: parseUpdate() validates a request once, applyUpdate() runs it against each matched document.
 *
 * Where JSON differs from BSON, these are the choices made:
 * - JSON has no Date or Timestamp type, so $currentDate writes what a JSON client can round-trip:
 *   `true` and `{$type: "date"}` store `now.toISOString()` (ISO 8601, UTC, with milliseconds), and
 *   `{$type: "timestamp"}` stores the integer milliseconds since the Unix epoch.
 * - Ints and doubles are one number type, so $inc and $mul never change or overflow a number's type.
 * - Documents live in jsonb, which does not keep object key order, so every equality here ($addToSet,
 *   $pull, $pullAll, the _id checks) ignores key order, where BSON comparison would not.
 * - Values written into documents may not hold field names starting with '$' or containing '.', at
 *   any depth: no path could address them afterwards.
 * - $min, $max and $push's $sort order embedded documents field by field, as MongoDB does; $pull's
 *   conditions compare them as filters do (field by field, in jsonb's key order); the SQL keys sorts
 *   use (mdb.key, migration 0002) compare their JSON text instead.
 *   test/integration/bson-order.test.ts pins which operation uses which order.
 *
 * The modules behind it: update/parse.ts (the parsed form and its checks), update/apply.ts (one
 * document changed), update/positional.ts (`$`, `$[]`, `$[<id>]` and arrayFilters: their checks,
 * and the concrete paths they stand for in one document), update/array-elements.ts ($push's
 * $sort and $pull's matching; $pull's conditions, like arrayFilters and `$`, are evaluated by
 * filter/match.ts),
 * update/upsert.ts (the document an upsert starts from), value/compare.ts (equality and BSON's order
 * of JSON values, and the helpers the others share).
 */

export { jsonEqual } from '../value/compare.js';
export { applyUpdate } from './apply.js';
export { parseUpdate, SUPPORTED_UPDATE_OPERATORS } from './parse.js';
export { upsertSeed } from './upsert.js';
