-- Drops the plain expires_at index, but only once its hash-sharded
-- replacement (1001) can serve queries, so that the expired-only purge and
-- the reaper are never left without an index on expires_at.
--
-- CREATE INDEX in an implicit transaction returns once the index is built.
-- Its IF NOT EXISTS does not: after a migrator that died mid-build, or
-- beside a second one still building, it can find the index present but
-- not yet public. So the first statement reads through the new index by
-- name: an index hint resolves only public indexes (not yet checked on a
-- cluster here), so until the build is done it fails, the runner stops
-- before the drop, and the next run of `dedupd migrate --cockroachdb-ttl`
-- tries again. It reads no rows.
SELECT count(*) FROM dedup_records@dedup_records_expires_at_sharded WHERE expires_at < '1970-01-01T00:00:00Z';

DROP INDEX IF EXISTS dedup_records@dedup_records_expires_at;
