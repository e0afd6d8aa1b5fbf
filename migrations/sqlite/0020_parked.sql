-- Park mode for streams (issue 20): each stream counts its parked events
-- and remembers the last gap it skipped; the events themselves live in
-- dedup_parked, as long as their stream (DeleteExpiredStreams deletes them
-- with it). ADD COLUMN has no IF NOT EXISTS in SQLite: the store's
-- migration runner takes "duplicate column name" as already done.
ALTER TABLE dedup_streams ADD COLUMN parked INTEGER NOT NULL DEFAULT 0;
ALTER TABLE dedup_streams ADD COLUMN parked_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE dedup_streams ADD COLUMN skipped INTEGER NOT NULL DEFAULT 0;
ALTER TABLE dedup_streams ADD COLUMN skip_from INTEGER NOT NULL DEFAULT 0;
ALTER TABLE dedup_streams ADD COLUMN skip_to INTEGER NOT NULL DEFAULT 0;
ALTER TABLE dedup_streams ADD COLUMN skip_cause TEXT NOT NULL DEFAULT '' CHECK (skip_cause IN ('', 'GAP_TIMEOUT', 'ADMIN'));
ALTER TABLE dedup_streams ADD COLUMN skipped_at INTEGER NOT NULL DEFAULT 0;

CREATE TABLE IF NOT EXISTS dedup_parked (
    consumer      TEXT    NOT NULL,
    stream        TEXT    NOT NULL,
    sequence      INTEGER NOT NULL CHECK (sequence > 0),
    digest        BLOB    NOT NULL,
    payload       BLOB    NOT NULL,
    payload_bytes INTEGER NOT NULL CHECK (payload_bytes >= 0),
    parked_at     INTEGER NOT NULL,
    PRIMARY KEY (consumer, stream, sequence)
) WITHOUT ROWID;

-- The streams that hold parked events, for ClaimParked, the gap timeout
-- and the metrics: partial, so streams that never park stay out of it.
CREATE INDEX IF NOT EXISTS dedup_streams_parked ON dedup_streams (consumer, stream) WHERE parked > 0;

-- A consumer's park rules; zero or empty means the server default.
ALTER TABLE dedup_stream_policies ADD COLUMN max_parked INTEGER NOT NULL DEFAULT 0;
ALTER TABLE dedup_stream_policies ADD COLUMN gap_timeout_us INTEGER NOT NULL DEFAULT 0;
ALTER TABLE dedup_stream_policies ADD COLUMN on_gap_timeout TEXT NOT NULL DEFAULT '' CHECK (on_gap_timeout IN ('', 'HOLD', 'SKIP'));
