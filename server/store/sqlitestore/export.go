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
	if s.closed.Load() {
		return nil, errClosed
	}
	rows, err := s.r.db.QueryContext(ctx, `SELECT consumer, key, `+recordFields+` FROM dedup_records
WHERE (consumer, key) > ($1, $2) ORDER BY consumer, key LIMIT `+strconv.Itoa(limit), afterConsumer, afterKey)
	if err != nil {
		return nil, dbError("export records", err)
	}
	defer rows.Close()
	var out []store.Record
	for rows.Next() {
		var r store.Record
		if err := scanFields(rows, &r, &r.Consumer, &r.Key); err != nil {
			return nil, dbError("export records", err)
		}
		if len(r.Digest) == 0 {
			r.Digest = nil
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError("export records", err)
	}
	return out, nil
}

// ExportStreams returns at most limit streams after (afterConsumer,
// afterStream) in (consumer, stream) order.
func (s *Store) ExportStreams(ctx context.Context, afterConsumer, afterStream string, limit int) ([]store.Stream, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	rows, err := s.r.db.QueryContext(ctx, `SELECT consumer, stream, `+streamFields+` FROM dedup_streams
WHERE (consumer, stream) > ($1, $2) ORDER BY consumer, stream LIMIT `+strconv.Itoa(limit), afterConsumer, afterStream)
	if err != nil {
		return nil, dbError("export streams", err)
	}
	defer rows.Close()
	var out []store.Stream
	for rows.Next() {
		var st store.Stream
		if err := scanStreamFields(rows, &st, &st.Consumer, &st.Stream); err != nil {
			return nil, dbError("export streams", err)
		}
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError("export streams", err)
	}
	return out, nil
}

// ExportStreamPolicies returns every stream policy, ordered by consumer.
func (s *Store) ExportStreamPolicies(ctx context.Context) ([]store.ConsumerStreamPolicy, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	rows, err := s.r.db.QueryContext(ctx, `SELECT `+sqlstmt.StreamPolicyColumns+` FROM dedup_stream_policies ORDER BY consumer`)
	if err != nil {
		return nil, dbError("export stream policies", err)
	}
	defer rows.Close()
	var out []store.ConsumerStreamPolicy
	for rows.Next() {
		p, err := scanStreamPolicy(rows)
		if err != nil {
			return nil, dbError("export stream policies", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError("export stream policies", err)
	}
	return out, nil
}

// ExportParked returns at most limit parked events, payloads included,
// after (afterConsumer, afterStream, afterSequence) in that order.
func (s *Store) ExportParked(ctx context.Context, afterConsumer, afterStream string, afterSequence int64, limit int) ([]store.ParkedEvent, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	rows, err := s.r.db.QueryContext(ctx, `SELECT consumer, stream, sequence, digest, payload, payload_bytes, parked_at
FROM dedup_parked WHERE (consumer, stream, sequence) > ($1, $2, $3)
ORDER BY consumer, stream, sequence LIMIT `+strconv.Itoa(limit), afterConsumer, afterStream, afterSequence)
	if err != nil {
		return nil, dbError("export parked events", err)
	}
	defer rows.Close()
	var out []store.ParkedEvent
	for rows.Next() {
		var ev store.ParkedEvent
		var at int64
		if err := rows.Scan(&ev.Consumer, &ev.Stream, &ev.Sequence, &ev.Digest, &ev.Payload, &ev.PayloadBytes, &at); err != nil {
			return nil, dbError("export parked events", err)
		}
		ev.ParkedAt = fromMicros(at)
		if len(ev.Digest) == 0 {
			ev.Digest = nil
		}
		if len(ev.Payload) == 0 {
			ev.Payload = nil
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError("export parked events", err)
	}
	return out, nil
}
