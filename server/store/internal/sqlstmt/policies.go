package sqlstmt

import (
	"time"

	"github.com/dedupd/dedupd/server/store"
)

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

// Row is one row of a result, as both drivers give it.
type Row interface{ Scan(dest ...any) error }

// ScanPolicy reads a row of PolicyColumns. A store keeps updated_at as T,
// which at turns into the time.
func ScanPolicy[T any](row Row, at func(T) time.Time) (store.ConsumerPolicy, error) {
	var (
		p                                                     store.ConsumerPolicy
		completed, rejected, released, defaultLease, maxLease int64
	)
	err := scanTimed(row, at, &p.UpdatedAt, func(updated *T) []any {
		return []any{&p.Consumer, &completed, &rejected, &released, &defaultLease, &maxLease,
			&p.MaxResultBytes, &p.RequireDigest, updated}
	})
	p.CompletedTTL, p.RejectedTTL, p.ReleasedTTL = durationOf(completed), durationOf(rejected), durationOf(released)
	p.DefaultLeaseTTL, p.MaxLeaseTTL = durationOf(defaultLease), durationOf(maxLease)
	return p, err
}

// ScanStreamPolicy reads a row of StreamPolicyColumns, as ScanPolicy.
func ScanStreamPolicy[T any](row Row, at func(T) time.Time) (store.ConsumerStreamPolicy, error) {
	var (
		p                  store.ConsumerStreamPolicy
		mode, start, onGap string
		ttl, gap           int64
	)
	err := scanTimed(row, at, &p.UpdatedAt, func(updated *T) []any {
		return []any{&p.Consumer, &ttl, &mode, &start, updated, &p.MaxParked, &gap, &onGap}
	})
	p.StreamTTL, p.GapTimeout = durationOf(ttl), durationOf(gap)
	p.Mode, p.Start, p.OnGapTimeout = store.StreamMode(mode), store.StreamStart(start), store.GapAction(onGap)
	return p, err
}

// durationOf reads a duration stored in microseconds.
func durationOf(us int64) time.Duration { return time.Duration(us) * time.Microsecond }
