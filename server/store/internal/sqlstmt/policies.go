package sqlstmt

// The policy statements. A put is INSERT ... ON CONFLICT DO UPDATE, not
// CockroachDB's UPSERT, which PostgreSQL lacks; both run it atomically,
// without a serialization failure on PostgreSQL's default READ COMMITTED.
// The others read no clock and take their arguments as they are.

// PolicyColumns are the columns of a consumer policy row, in scan order.
const PolicyColumns = `consumer, completed_ttl_us, rejected_ttl_us, released_ttl_us,
    default_lease_ttl_us, max_lease_ttl_us, max_result_bytes, require_digest, updated_at`

const (
	// GetPolicy reads consumer $1's policy.
	GetPolicy = `SELECT ` + PolicyColumns + ` FROM dedup_policies WHERE consumer = $1`
	// ListPolicies reads every policy, by consumer.
	ListPolicies = `SELECT ` + PolicyColumns + ` FROM dedup_policies ORDER BY consumer`
	// DeletePolicy deletes consumer $1's policy and returns it.
	DeletePolicy = `DELETE FROM dedup_policies WHERE consumer = $1 RETURNING ` + PolicyColumns
)

// PutPolicy creates or replaces a policy and returns it, stamped with the
// clock. Its arguments are the columns of PolicyColumns but updated_at.
func PutPolicy(d Dialect) string {
	return `INSERT INTO dedup_policies (` + PolicyColumns + `)
VALUES (` + d.args(1, 8) + `, ` + d.Now + `)
ON CONFLICT (consumer) DO UPDATE SET
    completed_ttl_us = excluded.completed_ttl_us, rejected_ttl_us = excluded.rejected_ttl_us,
    released_ttl_us = excluded.released_ttl_us, default_lease_ttl_us = excluded.default_lease_ttl_us,
    max_lease_ttl_us = excluded.max_lease_ttl_us, max_result_bytes = excluded.max_result_bytes,
    require_digest = excluded.require_digest, updated_at = excluded.updated_at
RETURNING ` + PolicyColumns
}

// StreamPolicyColumns are the columns of a stream policy row, in scan
// order.
const StreamPolicyColumns = `consumer, stream_ttl_us, mode, start, updated_at, max_parked, gap_timeout_us, on_gap_timeout`

const (
	// GetStreamPolicy reads consumer $1's stream policy.
	GetStreamPolicy = `SELECT ` + StreamPolicyColumns + ` FROM dedup_stream_policies WHERE consumer = $1`
	// DeleteStreamPolicy deletes consumer $1's stream policy and returns it.
	DeleteStreamPolicy = `DELETE FROM dedup_stream_policies WHERE consumer = $1 RETURNING ` + StreamPolicyColumns
)

// PutStreamPolicy creates or replaces a stream policy and returns it,
// stamped with the clock. Its arguments are the columns of
// StreamPolicyColumns but updated_at.
func PutStreamPolicy(d Dialect) string {
	return `INSERT INTO dedup_stream_policies (` + StreamPolicyColumns + `)
VALUES (` + d.args(1, 4) + `, ` + d.Now + `, ` + d.args(5, 3) + `)
ON CONFLICT (consumer) DO UPDATE SET
    stream_ttl_us = excluded.stream_ttl_us, mode = excluded.mode, start = excluded.start,
    updated_at = excluded.updated_at, max_parked = excluded.max_parked,
    gap_timeout_us = excluded.gap_timeout_us, on_gap_timeout = excluded.on_gap_timeout
RETURNING ` + StreamPolicyColumns
}
