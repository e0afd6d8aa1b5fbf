-- Per-consumer retention policies, and the indexes of the admin queries.
-- Durations are BIGINT microseconds rather than INTERVAL: an INTERVAL's
-- months and days are calendar units that PostgreSQL and CockroachDB, and
-- Go's time.Duration, would each read differently. Zero means "use the
-- server default".
CREATE TABLE IF NOT EXISTS dedup_policies (
    consumer             TEXT        NOT NULL PRIMARY KEY,
    completed_ttl_us     BIGINT      NOT NULL CHECK (completed_ttl_us >= 0),
    rejected_ttl_us      BIGINT      NOT NULL CHECK (rejected_ttl_us >= 0),
    released_ttl_us      BIGINT      NOT NULL CHECK (released_ttl_us >= 0),
    default_lease_ttl_us BIGINT      NOT NULL CHECK (default_lease_ttl_us >= 0),
    max_lease_ttl_us     BIGINT      NOT NULL CHECK (max_lease_ttl_us >= 0),
    max_result_bytes     BIGINT      NOT NULL CHECK (max_result_bytes >= 0),
    require_digest       BOOLEAN     NOT NULL,
    updated_at           TIMESTAMPTZ NOT NULL
);

-- The reconciliation queue: a consumer's pending claims by lease expiry.
-- Partial, so that it holds only the few pending rows and a claim's
-- Complete removes its entry. ListRecords and Stats otherwise walk the
-- primary key (consumer, key) from the consumer's first key, or AfterKey.
CREATE INDEX IF NOT EXISTS dedup_records_pending_lease
    ON dedup_records (consumer, lease_expires_at) WHERE state = 'PENDING';
