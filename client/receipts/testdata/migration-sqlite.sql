CREATE TABLE IF NOT EXISTS dedupd_receipts (
	consumer      TEXT    NOT NULL,
	key           TEXT    NOT NULL,
	fencing_token INTEGER NOT NULL CHECK (fencing_token > 0),
	result        BLOB    NOT NULL,
	recorded_at   INTEGER NOT NULL,
	expires_at    INTEGER NOT NULL,
	PRIMARY KEY (consumer, key)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS dedupd_receipts_schema (version INTEGER PRIMARY KEY);

INSERT INTO dedupd_receipts_schema (version) VALUES (1) ON CONFLICT DO NOTHING;

