INSERT INTO dedupd_receipts (consumer, key, fencing_token, result, recorded_at, expires_at)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (consumer, key) DO UPDATE SET
	fencing_token = excluded.fencing_token, result = excluded.result,
	recorded_at = excluded.recorded_at, expires_at = excluded.expires_at
WHERE dedupd_receipts.expires_at <= excluded.recorded_at
RETURNING fencing_token;

SELECT fencing_token, result FROM dedupd_receipts WHERE consumer = ? AND key = ? AND expires_at > ?;

DELETE FROM dedupd_receipts WHERE (consumer, key) IN (
	SELECT consumer, key FROM dedupd_receipts WHERE expires_at <= ? LIMIT ?);

