-- Optional, CockroachDB only (v23.2 or later): applied by
-- `dedupd migrate --cockroachdb-ttl`, never by plain `dedupd migrate`.
-- Versions start at 1001 so that this set shares dedup_schema_migrations
-- with the portable set without colliding. See docs/cockroachdb.md.

-- Row-level TTL: CockroachDB's own job deletes rows past expires_at, in
-- place of dedupd's reaper (run the servers with --reaper=off). Expired rows
-- stay readable until the job gets to them; every dedupd query filters on
-- expires_at, so they are already treated as absent. The job scans the
-- whole table, so it runs hourly rather than every few minutes; change
-- ttl_job_cron to taste.
ALTER TABLE dedup_records SET (ttl_expiration_expression = 'expires_at', ttl_job_cron = '@hourly');

-- A hash-sharded expires_at index, to replace the plain one, whose inserts
-- all land at the end of one range (every new record expires later than the
-- last). The plain index is dropped by the next migration, once this one is
-- known to be usable.
CREATE INDEX IF NOT EXISTS dedup_records_expires_at_sharded ON dedup_records (expires_at) USING HASH;
