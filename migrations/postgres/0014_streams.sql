-- Ordered streams (issue 14): one row per (consumer, stream) holding its
-- high-water mark and at most one in-flight claim. New tables only, in the
-- same portable SQL as dedup_records: TEXT + CHECK instead of enum types,
-- no sequences, compare-and-set on row_version.
CREATE TABLE IF NOT EXISTS dedup_streams (
    consumer          TEXT        NOT NULL,
    stream            TEXT        NOT NULL,
    mode              TEXT        NOT NULL CHECK (mode IN ('DENSE', 'VERSIONS')),
    high_water        BIGINT      NOT NULL CHECK (high_water >= 0),
    last_outcome      TEXT        NOT NULL CHECK (last_outcome IN ('', 'COMPLETED', 'REJECTED')),
    rejection_reason  TEXT,
    rejection_message TEXT,
    rejection_detail  BYTEA,
    finished_token    BIGINT      NOT NULL,
    rejected          BIGINT      NOT NULL,
    -- 0 when no claim is in flight.
    in_flight         BIGINT      NOT NULL CHECK (in_flight >= 0),
    digest            BYTEA       NOT NULL,
    fencing_token     BIGINT      NOT NULL,
    owner             TEXT        NOT NULL,
    lease_expires_at  TIMESTAMPTZ NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL,
    updated_at        TIMESTAMPTZ NOT NULL,
    expires_at        TIMESTAMPTZ NOT NULL,
    row_version       BIGINT      NOT NULL DEFAULT 1,
    PRIMARY KEY (consumer, stream)
);

-- The reaper walks this index (see docs/cockroachdb.md on monotonic indexes).
CREATE INDEX IF NOT EXISTS dedup_streams_expires_at ON dedup_streams (expires_at);

-- The reconciliation queue of streams: claims in flight by lease expiry.
-- Partial, so a finished claim leaves it.
CREATE INDEX IF NOT EXISTS dedup_streams_in_flight
    ON dedup_streams (consumer, lease_expires_at) WHERE in_flight <> 0;

-- Per-consumer stream rules; zero or empty means the server default.
CREATE TABLE IF NOT EXISTS dedup_stream_policies (
    consumer      TEXT        NOT NULL PRIMARY KEY,
    stream_ttl_us BIGINT      NOT NULL CHECK (stream_ttl_us >= 0),
    mode          TEXT        NOT NULL CHECK (mode IN ('', 'DENSE', 'VERSIONS')),
    start         TEXT        NOT NULL CHECK (start IN ('', 'ONE', 'FIRST_CLAIM')),
    updated_at    TIMESTAMPTZ NOT NULL
);
