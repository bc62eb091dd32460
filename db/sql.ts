import type postgres from 'postgres';

/** The one database handle type: postgres.js, over PostgreSQL or over embedded PGlite. */
export type Sql = postgres.Sql;
export type TransactionSql = postgres.TransactionSql;
