import {
  createIndex as createIndexRow,
  deleteIndex as deleteIndexRow,
  ID_INDEX_NAME,
  type IndexKey,
  type IndexOptions,
  type IndexRow,
} from '../db/storage/catalog.js';
import { errors, QueryError } from '../errors.js';
import type { components } from '../generated/openapi.js';
import { checkTextIndex, type TextIndexOptions } from '../mongo/filter/text-search.js';
import { parseIndexKind } from '../mongo/index-options.js';
import { parsePath } from '../mongo/value/path.js';
import { requireCollection } from './storage-lookup.js';
import type { Handler, HandlerDeps } from './types.js';

type Index = components['schemas']['Index'];

/** MongoDB's limit is 64 including _id_; each field also adds three columns to the table. */
export const MAX_INDEXES = 63;

/** The index as created: its options are reported as given. */
function present(ix: Pick<IndexRow, 'name' | 'key' | 'is_unique' | 'options'>): Index {
  return {
    name: ix.name,
    key: ix.key.map(([path, dir]) => ({ [path]: dir })),
    unique: ix.is_unique,
    ...ix.options,
  };
}

/** The request's options besides name, key and unique, checked against each other and the key. */
function parseOptions(body: components['schemas']['IndexCreate'], key: IndexKey): IndexOptions {
  const { name: _name, key: _key, unique: _unique, ...options } = body;
  if (key.some(([, dir]) => dir === 'text')) {
    // A text index is built apart from the key columns these options act on.
    const other = (['partialFilterExpression', 'sparse', 'expireAfterSeconds'] as const).filter(
      (o) => options[o] !== undefined,
    );
    if (other.length > 0) throw new QueryError(`${other.join(', ')} cannot be given to a text index here.`);
  }
  parseIndexKind(
    key.map(([p]) => p),
    options,
  );
  return options as IndexOptions;
}

/** `["a", {"b": -1}]` → `[["a", 1], ["b", -1]]`, with every path checked. */
function parseKey(key: components['schemas']['IndexCreate']['key']): IndexKey {
  const out: IndexKey = key.map((entry) => {
    const [path, dir] =
      typeof entry === 'string'
        ? [entry, 1 as const]
        : (Object.entries(entry)[0] as [string, 1 | -1 | 'text']);
    parsePath(path, 'index field');
    if (path === '_id' || path.startsWith('_id.'))
      throw new QueryError(`'${path}' is covered by the built-in _id_ index; index other fields.`);
    return [path, dir];
  });
  const paths = out.map(([p]) => p);
  const dup = paths.find((p, i) => paths.indexOf(p) !== i);
  if (dup) throw new QueryError(`The index key names '${dup}' twice.`);
  return out;
}

export function indexHandlers({ sql, statistics, catalog }: HandlerDeps) {
  const listIndexes: Handler<'listIndexes'> = async ({ params }) => {
    const c = await requireCollection(sql, params.name, params.storage_name);
    const builtIn = present({ name: ID_INDEX_NAME, key: [['_id', 1]], is_unique: true, options: {} });
    const rest = [...c.indexes].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map(present);
    return { status: 200, body: { result: [builtIn, ...rest] } };
  };

  const createIndex: Handler<'createIndex'> = async ({ params, body }) => {
    const c = await requireCollection(sql, params.name, params.storage_name);
    if (body.name === ID_INDEX_NAME) throw errors.indexExists(body.name);
    if (c.indexes.length >= MAX_INDEXES)
      throw errors.badRequest(
        `A collection has at most ${MAX_INDEXES} indexes besides _id_; delete one first.`,
      );
    const key = parseKey(body.key);
    const options = parseOptions(body, key);
    checkTextIndex(key, body.unique ?? false, options as TextIndexOptions);
    const outcome = await createIndexRow(sql, c, body.name, key, body.unique ?? false, options);
    if ('textIndex' in outcome)
      throw errors.badRequest(
        `only one text index per collection allowed, found existing text index "${outcome.textIndex}".`,
      );
    if ('exists' in outcome) throw errors.indexExists(body.name);
    if ('duplicates' in outcome)
      throw errors.duplicateKey(
        `Existing documents have duplicate values for the unique index '${body.name}' (${key.map(([p]) => p).join(', ')}); no index was created.`,
      );
    // The new key columns have no statistics yet; without them the planner would not trust the index.
    await statistics.analyze(c.table);
    catalog.forget(params.name);
    return { status: 201, body: { result: present(outcome.created) } };
  };

  const deleteIndex: Handler<'deleteIndex'> = async ({ params }) => {
    const c = await requireCollection(sql, params.name, params.storage_name);
    if (params.index_name === ID_INDEX_NAME)
      throw errors.badRequest('The built-in _id_ index cannot be deleted.');
    if (!(await deleteIndexRow(sql, c, params.index_name))) throw errors.indexNotFound(params.index_name);
    catalog.forget(params.name);
    return { status: 204 };
  };

  return { listIndexes, createIndex, deleteIndex };
}
