'use strict';
// The receipt table's SQL for PostgreSQL and CockroachDB: the same table,
// migration version and statements as the Go helper (client/receipts,
// sql.go), so that services in several languages share one table. The
// table name is written into the SQL, so it is checked rather than quoted.

/** The receipt table's migration version (recorded in <table>_schema). */
const SCHEMA_VERSION = 1;

/** The receipt table's name when none is given. */
const DEFAULT_TABLE = 'dedupd_receipts';

const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,50}$/;

/** table, or DEFAULT_TABLE when empty; throws TypeError when it is not a plain SQL identifier. */
function tableName(table) {
  const name = table || DEFAULT_TABLE;
  if (typeof name !== 'string' || !TABLE_NAME.test(name)) {
    throw new TypeError(`receipts: table name ${JSON.stringify(name)} is not a plain SQL identifier ([A-Za-z_][A-Za-z0-9_]*, at most 51 characters)`);
  }
  return name;
}

/** Migration version 1: the statements, each to run in its own transaction (CockroachDB's rule for DDL), in order. */
function migration(table) {
  return [
    `CREATE TABLE IF NOT EXISTS ${table} (
	consumer      TEXT        NOT NULL,
	key           TEXT        NOT NULL,
	fencing_token BIGINT      NOT NULL CHECK (fencing_token > 0),
	result        BYTEA       NOT NULL,
	recorded_at   TIMESTAMPTZ NOT NULL,
	expires_at    TIMESTAMPTZ NOT NULL,
	PRIMARY KEY (consumer, key)
)`,
    `CREATE TABLE IF NOT EXISTS ${table}_schema (version INTEGER PRIMARY KEY)`,
    `INSERT INTO ${table}_schema (version) VALUES (${SCHEMA_VERSION}) ON CONFLICT DO NOTHING`,
  ];
}

/**
 * The receipt's statements for table. write returns a row only when the
 * receipt was written: no live receipt existed (none, or an expired one it
 * replaced). Tokens are read as text, so that a pg type parser set to
 * numbers cannot round one past 2^53.
 */
function statements(table) {
  return {
    write: `INSERT INTO ${table} (consumer, key, fencing_token, result, recorded_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (consumer, key) DO UPDATE SET
	fencing_token = excluded.fencing_token, result = excluded.result,
	recorded_at = excluded.recorded_at, expires_at = excluded.expires_at
WHERE ${table}.expires_at <= excluded.recorded_at
RETURNING fencing_token`,
    settle: `SELECT fencing_token::TEXT AS fencing_token, result FROM ${table} WHERE consumer = $1 AND key = $2 AND expires_at > $3`,
    prune: `DELETE FROM ${table} WHERE (consumer, key) IN (
	SELECT consumer, key FROM ${table} WHERE expires_at <= $1 LIMIT $2)`,
  };
}

module.exports = { SCHEMA_VERSION, DEFAULT_TABLE, tableName, migration, statements };
