-- Optional, CockroachDB only: row-level TTL for dedup_streams, as
-- 1001_row_level_ttl does for dedup_records, so that --reaper=off leaves no
-- table to grow. Applied by `dedupd migrate --cockroachdb-ttl`.
ALTER TABLE dedup_streams SET (ttl_expiration_expression = 'expires_at', ttl_job_cron = '@hourly');

CREATE INDEX IF NOT EXISTS dedup_streams_expires_at_sharded ON dedup_streams (expires_at) USING HASH;

DROP INDEX IF EXISTS dedup_streams@dedup_streams_expires_at;
