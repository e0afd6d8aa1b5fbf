-- Ordered streams (issue 14): one row per (consumer, stream) holding its
-- high-water mark and at most one in-flight claim. Times are Unix
-- microseconds, as in dedup_records.
CREATE TABLE IF NOT EXISTS dedup_streams (
    consumer          TEXT    NOT NULL,
    stream            TEXT    NOT NULL,
    mode              TEXT    NOT NULL CHECK (mode IN ('DENSE', 'VERSIONS')),
    high_water        INTEGER NOT NULL CHECK (high_water >= 0),
    last_outcome      TEXT    NOT NULL CHECK (last_outcome IN ('', 'COMPLETED', 'REJECTED')),
    rejection_reason  TEXT,
    rejection_message TEXT,
    rejection_detail  BLOB,
    finished_token    INTEGER NOT NULL,
    rejected          INTEGER NOT NULL,
    in_flight         INTEGER NOT NULL CHECK (in_flight >= 0),
    digest            BLOB    NOT NULL,
    fencing_token     INTEGER NOT NULL,
    owner             TEXT    NOT NULL,
    lease_expires_at  INTEGER NOT NULL,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    expires_at        INTEGER NOT NULL,
    PRIMARY KEY (consumer, stream)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS dedup_streams_expires_at ON dedup_streams (expires_at);

CREATE INDEX IF NOT EXISTS dedup_streams_in_flight
    ON dedup_streams (consumer, lease_expires_at) WHERE in_flight <> 0;

CREATE TABLE IF NOT EXISTS dedup_stream_policies (
    consumer      TEXT    NOT NULL PRIMARY KEY,
    stream_ttl_us INTEGER NOT NULL CHECK (stream_ttl_us >= 0),
    mode          TEXT    NOT NULL CHECK (mode IN ('', 'DENSE', 'VERSIONS')),
    start         TEXT    NOT NULL CHECK (start IN ('', 'ONE', 'FIRST_CLAIM')),
    updated_at    INTEGER NOT NULL
) WITHOUT ROWID;
