-- The dedup record of each (consumer, key). Runs unchanged on PostgreSQL and
-- CockroachDB: TEXT + CHECK instead of an enum type, no sequences. A fresh
-- claim writes the row, an entry in the expiry index below and one in the
-- partial pending-lease index of 0002 (docs/cockroachdb.md).
CREATE TABLE IF NOT EXISTS dedup_records (
    consumer            TEXT        NOT NULL,
    key                 TEXT        NOT NULL,
    state               TEXT        NOT NULL CHECK (state IN ('PENDING', 'COMPLETED', 'REJECTED', 'RELEASED')),
    digest              BYTEA       NOT NULL,
    fencing_token       BIGINT      NOT NULL,
    attempts            BIGINT      NOT NULL,
    owner               TEXT        NOT NULL,
    result              BYTEA,
    rejection_reason    TEXT,
    rejection_message   TEXT,
    rejection_detail    BYTEA,
    rejection_retryable BOOLEAN,
    created_at          TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL,
    lease_expires_at    TIMESTAMPTZ NOT NULL,
    expires_at          TIMESTAMPTZ NOT NULL,
    -- Bumped by every write: updates are compare-and-set on it.
    row_version         BIGINT      NOT NULL DEFAULT 1,
    PRIMARY KEY (consumer, key)
);

-- The reaper walks this index. On CockroachDB an index on a monotonic
-- timestamp concentrates writes on one range; see docs/cockroachdb.md.
CREATE INDEX IF NOT EXISTS dedup_records_expires_at ON dedup_records (expires_at);
