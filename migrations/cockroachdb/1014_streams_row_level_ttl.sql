-- Optional, CockroachDB only: row-level TTL and a hash-sharded expiry index
-- for dedup_streams, as 1001_row_level_ttl does for dedup_records, so that
-- --reaper=off leaves no table to grow. Applied by
-- `dedupd migrate --cockroachdb-ttl`; 1015 drops the plain index after.
ALTER TABLE dedup_streams SET (ttl_expiration_expression = 'expires_at', ttl_job_cron = '@hourly');

CREATE INDEX IF NOT EXISTS dedup_streams_expires_at_sharded ON dedup_streams (expires_at) USING HASH;
