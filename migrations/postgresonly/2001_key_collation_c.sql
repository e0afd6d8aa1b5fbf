-- PostgreSQL only: applied by `dedupd migrate` when the database is
-- PostgreSQL, never on CockroachDB, which compares TEXT bytewise already and
-- must not be given collated strings. Versions start at 2001 so that this
-- set shares dedup_schema_migrations with the portable one without
-- colliding.

-- Keys and consumers compare bytewise, as on every other store and as
-- docs/api.md promises: without this, ORDER BY key, the keyset condition
-- key > $after, and so ListRecords' pages followed the database's collation
-- (on an ICU en-US database: _x a a-b ab B é instead of B _x a a-b ab é).
-- Under "C" a LIKE 'prefix%' also becomes a range on the primary key.
-- The table is not rewritten, but its indexes on these columns are rebuilt
-- under an exclusive lock: on a large table, run it in a quiet hour.
ALTER TABLE dedup_records
    ALTER COLUMN consumer TYPE TEXT COLLATE "C",
    ALTER COLUMN key TYPE TEXT COLLATE "C";

ALTER TABLE dedup_policies ALTER COLUMN consumer TYPE TEXT COLLATE "C";
