-- Per-consumer retention policies, and the indexes of the admin queries.
-- Durations are microseconds; zero means "use the server default".
CREATE TABLE IF NOT EXISTS dedup_policies (
    consumer             TEXT    NOT NULL PRIMARY KEY,
    completed_ttl_us     INTEGER NOT NULL CHECK (completed_ttl_us >= 0),
    rejected_ttl_us      INTEGER NOT NULL CHECK (rejected_ttl_us >= 0),
    released_ttl_us      INTEGER NOT NULL CHECK (released_ttl_us >= 0),
    default_lease_ttl_us INTEGER NOT NULL CHECK (default_lease_ttl_us >= 0),
    max_lease_ttl_us     INTEGER NOT NULL CHECK (max_lease_ttl_us >= 0),
    max_result_bytes     INTEGER NOT NULL CHECK (max_result_bytes >= 0),
    require_digest       INTEGER NOT NULL,
    updated_at           INTEGER NOT NULL
) WITHOUT ROWID;

-- The reconciliation queue: a consumer's pending claims by lease expiry.
CREATE INDEX IF NOT EXISTS dedup_records_pending_lease
    ON dedup_records (consumer, lease_expires_at) WHERE state = 'PENDING';
