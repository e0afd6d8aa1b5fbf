package sqlitestore

import (
	"context"
	"strconv"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
)

// Export: every row as it is stored, expired ones included (their fencing
// tokens still count), in (consumer, name) order, bytewise. It is what
// `dedupd migrate-store` copies out of a SQLite data directory
// (server/store/storecopy), one keyset page at a time.

// ExportRecords returns at most limit records after (afterConsumer,
// afterKey) in (consumer, key) order; start with both empty.
func (s *Store) ExportRecords(ctx context.Context, afterConsumer, afterKey string, limit int) ([]store.Record, error) {
	return queryAll(ctx, s, "export records", `SELECT consumer, key, `+recordFields+` FROM dedup_records
WHERE (consumer, key) > ($1, $2) ORDER BY consumer, key LIMIT `+strconv.Itoa(limit), []any{afterConsumer, afterKey},
		func(row sqlstmt.Row) (store.Record, error) {
			var r store.Record
			if err := scanFields(row, &r, &r.Consumer, &r.Key); err != nil {
				return r, err
			}
			if len(r.Digest) == 0 {
				r.Digest = nil
			}
			return r, nil
		})
}

// ExportStreams returns at most limit streams after (afterConsumer,
// afterStream) in (consumer, stream) order.
func (s *Store) ExportStreams(ctx context.Context, afterConsumer, afterStream string, limit int) ([]store.Stream, error) {
	return queryAll(ctx, s, "export streams", `SELECT consumer, stream, `+streamFields+` FROM dedup_streams
WHERE (consumer, stream) > ($1, $2) ORDER BY consumer, stream LIMIT `+strconv.Itoa(limit), []any{afterConsumer, afterStream},
		func(row sqlstmt.Row) (store.Stream, error) {
			var st store.Stream
			err := scanStreamFields(row, &st, &st.Consumer, &st.Stream)
			return st, err
		})
}

// ExportStreamPolicies returns every stream policy, ordered by consumer.
func (s *Store) ExportStreamPolicies(ctx context.Context) ([]store.ConsumerStreamPolicy, error) {
	return queryAll(ctx, s, "export stream policies",
		`SELECT `+sqlstmt.StreamPolicyColumns+` FROM dedup_stream_policies ORDER BY consumer`, nil,
		func(row sqlstmt.Row) (store.ConsumerStreamPolicy, error) { return scanStreamPolicy(row) })
}

// ExportParked returns at most limit parked events, payloads included,
// after (afterConsumer, afterStream, afterSequence) in that order.
func (s *Store) ExportParked(ctx context.Context, afterConsumer, afterStream string, afterSequence int64, limit int) ([]store.ParkedEvent, error) {
	return queryAll(ctx, s, "export parked events", `SELECT consumer, stream, `+sqlstmt.ParkedEventColumns+`, payload
FROM dedup_parked WHERE (consumer, stream, sequence) > ($1, $2, $3)
ORDER BY consumer, stream, sequence LIMIT `+strconv.Itoa(limit), []any{afterConsumer, afterStream, afterSequence},
		func(row sqlstmt.Row) (store.ParkedEvent, error) {
			var ev store.ParkedEvent
			err := scanParkedEvent(row, &ev, true, &ev.Consumer, &ev.Stream)
			return ev, err
		})
}
