-- Park mode for streams (issue 20): each stream counts its parked events
-- and remembers the last gap it skipped; the events themselves live in
-- dedup_parked, as long as their stream: the foreign key deletes them with
-- it, whoever deletes it (the reaper, or CockroachDB's row-level TTL).
ALTER TABLE dedup_streams ADD COLUMN IF NOT EXISTS parked BIGINT NOT NULL DEFAULT 0;
ALTER TABLE dedup_streams ADD COLUMN IF NOT EXISTS parked_bytes BIGINT NOT NULL DEFAULT 0;
ALTER TABLE dedup_streams ADD COLUMN IF NOT EXISTS skipped BIGINT NOT NULL DEFAULT 0;
ALTER TABLE dedup_streams ADD COLUMN IF NOT EXISTS skip_from BIGINT NOT NULL DEFAULT 0;
ALTER TABLE dedup_streams ADD COLUMN IF NOT EXISTS skip_to BIGINT NOT NULL DEFAULT 0;
ALTER TABLE dedup_streams ADD COLUMN IF NOT EXISTS skip_cause TEXT NOT NULL DEFAULT '' CHECK (skip_cause IN ('', 'GAP_TIMEOUT', 'ADMIN'));
ALTER TABLE dedup_streams ADD COLUMN IF NOT EXISTS skipped_at TIMESTAMPTZ;

CREATE TABLE IF NOT EXISTS dedup_parked (
    consumer      TEXT        NOT NULL,
    stream        TEXT        NOT NULL,
    sequence      BIGINT      NOT NULL CHECK (sequence > 0),
    digest        BYTEA       NOT NULL,
    payload       BYTEA       NOT NULL,
    payload_bytes BIGINT      NOT NULL CHECK (payload_bytes >= 0),
    parked_at     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (consumer, stream, sequence),
    FOREIGN KEY (consumer, stream) REFERENCES dedup_streams (consumer, stream) ON DELETE CASCADE
);

-- The streams that hold parked events, for ClaimParked, the gap timeout
-- and the metrics: partial, so streams that never park stay out of it.
CREATE INDEX IF NOT EXISTS dedup_streams_parked ON dedup_streams (consumer, stream) WHERE parked > 0;

-- A consumer's park rules; zero or empty means the server default.
ALTER TABLE dedup_stream_policies ADD COLUMN IF NOT EXISTS max_parked BIGINT NOT NULL DEFAULT 0;
ALTER TABLE dedup_stream_policies ADD COLUMN IF NOT EXISTS gap_timeout_us BIGINT NOT NULL DEFAULT 0;
ALTER TABLE dedup_stream_policies ADD COLUMN IF NOT EXISTS on_gap_timeout TEXT NOT NULL DEFAULT '' CHECK (on_gap_timeout IN ('', 'HOLD', 'SKIP'));
