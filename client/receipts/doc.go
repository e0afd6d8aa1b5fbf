// Package receipts writes dedupd receipts: a row in the caller's own SQL
// database, committed in the caller's own transaction beside the effect,
// that says "the effect of (consumer, key) happened under fencing token T
// with result R". Because the effect and its receipt commit or roll back
// together, a takeover holder settles by asking the database (Settle), and
// Do with receipts needs no hand-written settle function.
//
// The design is shared by every dedupd client (RECEIPTS-SPEC.md); the Go
// helper follows it exactly:
//
//   - Migrate creates the receipt table (migration version 1, the DDL in
//     sql.go) and records the version in <table>_schema, one statement per
//     transaction (CockroachDB's rule), idempotently;
//   - Write records the receipt inside the caller's transaction, over
//     database/sql (SQLTx) or pgx (PgxTx). When a live receipt exists it
//     returns ErrStale and the caller must roll back, taking its effect
//     with it;
//   - Run (and Effect, its form for client.Do) runs the caller's effect and
//     the receipt in one transaction, retries the whole transaction from
//     BEGIN on SQLSTATE 40001 (up to MaxAttempts), rolls back on ErrStale,
//     and reports 40003 or a failed COMMIT as an unknown outcome
//     (client.Unknown), which leaves the claim PENDING for Settle to decide;
//   - Settle is a client.SettleFunc for Do, DoBatch and Reconciler;
//   - Prune deletes expired receipts in bounded batches.
//
// A receipt expires with the consumer's retention of completed records
// (TTL, or TTLFromPolicy), so it never outlives the record it stands for.
package receipts
