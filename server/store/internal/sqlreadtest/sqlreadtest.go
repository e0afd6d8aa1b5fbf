// Package sqlreadtest holds a SQL store's admin reads to the read rules of
// package store, as an oracle test: it writes rows over every record state
// and every clock boundary (a microsecond before, at and after the time a
// statement compares with), runs the store's reads with its clock stopped
// (sqlstmt.Dialect.At), and compares each answer with the rule's fold over
// the same rows: ListParams.Matches for ListRecords, PurgeParams.Matches
// for CountPurge and PurgeBatch, ConsumerStats.Count (StatsOf) for Stats,
// and ParkedReady for the streams ClaimParked may pick.
package sqlreadtest

import (
	"context"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
)

// Reads are a store's admin reads, each taking the dialect whose clock it
// reads; a store lists its unexported methods here (see its
// export_test.go).
type Reads[S any] struct {
	List func(S, context.Context, sqlstmt.Dialect, store.ListParams) ([]store.Record, error)
	// Purge deletes a batch, or with CountOnly counts.
	Purge func(S, context.Context, sqlstmt.Dialect, store.PurgeParams) (int64, error)
	Stats func(S, context.Context, sqlstmt.Dialect, string) ([]store.ConsumerStats, error)
	Ready func(S, context.Context, sqlstmt.Dialect, string) ([]string, error)
}

// Backend is one SQL store under test, migrated and empty.
type Backend[S any] struct {
	Store S
	// Dialect is the store's own; the test stops its clock.
	Dialect sqlstmt.Dialect
	// Exec runs a statement that writes rows, on the store's database.
	Exec  func(ctx context.Context, sql string, args ...any) error
	Reads Reads[S]
}

// now is the stopped clock; every generated time is near it.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Run writes the generated rows into b's store and checks every read.
func Run[S any](t *testing.T, b Backend[S]) {
	ctx := context.Background()
	d := b.Dialect.At(now)
	recs := records()
	for i := range recs {
		insertRecord(ctx, t, b, &recs[i])
	}
	streams := streamRows()
	for i := range streams {
		insertStream(ctx, t, b, &streams[i])
	}
	t.Run("Stats", func(t *testing.T) { checkStats(ctx, t, b, d, recs) })
	t.Run("ListRecords", func(t *testing.T) { checkList(ctx, t, b, d, recs) })
	t.Run("CountPurge", func(t *testing.T) { checkCount(ctx, t, b, d, recs) })
	t.Run("ReadyStreams", func(t *testing.T) { checkReady(ctx, t, b, d, streams) })
	// Last, as it deletes rows.
	t.Run("PurgeBatch", func(t *testing.T) { checkPurge(ctx, t, b, d, recs) })
}

func insertRecord[S any](ctx context.Context, t *testing.T, b Backend[S], r *store.Record) {
	err := b.Exec(ctx, `INSERT INTO dedup_records (consumer, key, state, digest, fencing_token, attempts, owner,
    created_at, updated_at, lease_expires_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		r.Consumer, r.Key, string(r.State), []byte{}, r.FencingToken, r.Attempts, r.Owner,
		b.Dialect.Time(r.CreatedAt), b.Dialect.Time(r.UpdatedAt), b.Dialect.Time(r.LeaseExpiresAt), b.Dialect.Time(r.ExpiresAt))
	if err != nil {
		t.Fatalf("inserting record %q/%q: %v", r.Consumer, r.Key, err)
	}
}

func insertStream[S any](ctx context.Context, t *testing.T, b Backend[S], s *streamRow) {
	st := &s.Stream
	err := b.Exec(ctx, `INSERT INTO dedup_streams (consumer, stream, mode, high_water, last_outcome, finished_token,
    rejected, in_flight, digest, fencing_token, owner, lease_expires_at, created_at, updated_at, expires_at, parked)
VALUES ($1, $2, $3, $4, '', 0, 0, $5, $6, $7, '', $8, $9, $9, $10, $11)`,
		st.Consumer, st.Stream, string(st.Mode), st.HighWater, st.InFlight, []byte{}, st.FencingToken,
		b.Dialect.Time(st.LeaseExpiresAt), b.Dialect.Time(st.CreatedAt), b.Dialect.Time(st.ExpiresAt), st.Parked)
	if err != nil {
		t.Fatalf("inserting stream %q/%q: %v", st.Consumer, st.Stream, err)
	}
	for _, seq := range s.parked {
		err := b.Exec(ctx, `INSERT INTO dedup_parked (consumer, stream, sequence, digest, payload, payload_bytes, parked_at)
VALUES ($1, $2, $3, $4, $4, 0, $5)`, st.Consumer, st.Stream, seq, []byte{}, b.Dialect.Time(st.CreatedAt))
		if err != nil {
			t.Fatalf("inserting parked event %q/%q/%d: %v", st.Consumer, st.Stream, seq, err)
		}
	}
}
