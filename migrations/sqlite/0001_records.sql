-- The dedup record of each (consumer, key). Times are Unix microseconds, the
-- precision the PostgreSQL store keeps too.
CREATE TABLE IF NOT EXISTS dedup_records (
    consumer            TEXT    NOT NULL,
    key                 TEXT    NOT NULL,
    state               TEXT    NOT NULL CHECK (state IN ('PENDING', 'COMPLETED', 'REJECTED', 'RELEASED')),
    digest              BLOB    NOT NULL,
    fencing_token       INTEGER NOT NULL,
    attempts            INTEGER NOT NULL,
    owner               TEXT    NOT NULL,
    result              BLOB,
    rejection_reason    TEXT,
    rejection_message   TEXT,
    rejection_detail    BLOB,
    rejection_retryable INTEGER,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    lease_expires_at    INTEGER NOT NULL,
    expires_at          INTEGER NOT NULL,
    PRIMARY KEY (consumer, key)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS dedup_records_expires_at ON dedup_records (expires_at);
