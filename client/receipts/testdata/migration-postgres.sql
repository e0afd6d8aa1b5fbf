CREATE TABLE IF NOT EXISTS dedupd_receipts (
	consumer      TEXT        NOT NULL,
	key           TEXT        NOT NULL,
	fencing_token BIGINT      NOT NULL CHECK (fencing_token > 0),
	result        BYTEA       NOT NULL,
	recorded_at   TIMESTAMPTZ NOT NULL,
	expires_at    TIMESTAMPTZ NOT NULL,
	PRIMARY KEY (consumer, key)
);

CREATE TABLE IF NOT EXISTS dedupd_receipts_schema (version INTEGER PRIMARY KEY);

INSERT INTO dedupd_receipts_schema (version) VALUES (1) ON CONFLICT DO NOTHING;

