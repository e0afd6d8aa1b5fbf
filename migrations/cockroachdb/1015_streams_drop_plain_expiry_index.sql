-- Drops dedup_streams' plain expires_at index once its hash-sharded
-- replacement (1014) serves queries: the read through it by name fails
-- until the index is public, stopping the runner before the drop, as in
-- 1002_drop_plain_expiry_index.
SELECT count(*) FROM dedup_streams@dedup_streams_expires_at_sharded WHERE expires_at < '1970-01-01T00:00:00Z';

DROP INDEX IF EXISTS dedup_streams@dedup_streams_expires_at;
