package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dedupd/dedupd/internal/testing/pgtest"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pgstore"
)

var streamPolicy = store.StreamPolicy{DefaultLeaseTTL: time.Minute, StreamTTL: time.Hour}

func claimStream(seq int64, owner string) store.ClaimStreamParams {
	return store.ClaimStreamParams{Consumer: "billing", Stream: "order-1", Sequence: seq, Owner: owner, Policy: streamPolicy}
}

func completeStream(seq, token int64) store.CompleteStreamParams {
	return store.CompleteStreamParams{Consumer: "billing", Stream: "order-1", Sequence: seq, FencingToken: token, Policy: streamPolicy}
}

// streamStatements counts the statements of dedup_streams' writes and reads
// (the policy and clock queries aside).
func streamStatements(sqls []string) int {
	n := 0
	for _, sql := range sqls {
		if strings.Contains(sql, "dedup_streams") {
			n++
		}
	}
	return n
}

// Each write of a stream that one store keeps writing is one statement,
// its first claim included.
func TestStreamWriteStatements(t *testing.T) {
	ctx := context.Background()
	var log statementLog
	s := newTracedStore(t, &log)
	log.take()
	for seq := int64(1); seq <= 3; seq++ {
		c, err := s.ClaimStream(ctx, claimStream(seq, "w"))
		if err != nil || c.Outcome != store.StreamAcquired {
			t.Fatalf("claim %d: %v, %v", seq, c.Outcome, err)
		}
		if n := streamStatements(log.take()); n != 1 {
			t.Errorf("claim %d sent %d statements, want 1", seq, n)
		}
		res, err := s.CompleteStream(ctx, completeStream(seq, c.Stream.FencingToken))
		st := res.Stream
		if err != nil || st.HighWater != seq || st.InFlight != 0 {
			t.Fatalf("complete %d: %+v, %v", seq, st, err)
		}
		if n := streamStatements(log.take()); n != 1 {
			t.Errorf("complete %d sent %d statements, want 1", seq, n)
		}
		got, err := s.GetStream(ctx, "billing", "order-1")
		if err != nil || !sameStream(got, st) {
			t.Errorf("stored after complete %d: %+v, %v\n want %+v", seq, got, err, st)
		}
		log.take()
	}
	// A duplicate is answered from a read: only the row can say so.
	if c, err := s.ClaimStream(ctx, claimStream(2, "w")); err != nil || c.Outcome != store.StreamDuplicate {
		t.Errorf("duplicate claim: %v, %v", c.Outcome, err)
	}
}

func sameStream(a, b store.Stream) bool {
	return a.HighWater == b.HighWater && a.InFlight == b.InFlight && a.FencingToken == b.FencingToken &&
		a.Owner == b.Owner && a.UpdatedAt.Equal(b.UpdatedAt) && a.ExpiresAt.Equal(b.ExpiresAt) &&
		a.CreatedAt.Equal(b.CreatedAt) && a.LeaseExpiresAt.Equal(b.LeaseExpiresAt)
}

// A stream row changed under a store's remembered copy: the read-free
// write must not land, and the command is decided on the row that is
// there, as the plain read-then-write would (the model: ApplyStream on
// that row).
func TestStreamChangedUnderReadFreeWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		// change is what another server does after store a's claim of
		// sequence 1 (token 1).
		change func(t *testing.T, ctx context.Context, b *pgstore.Store)
		// lands says whether a's Complete(1, token 1) then writes.
		lands bool
	}{
		{"finished and claimed again (a repeat of b's finish)", func(t *testing.T, ctx context.Context, b *pgstore.Store) {
			mustFinish(t)(b.CompleteStream(ctx, completeStream(1, 1)))
			mustClaimStream(t, ctx, b, claimStream(2, "b"))
		}, false},
		{"reset (the claim dropped)", func(t *testing.T, ctx context.Context, b *pgstore.Store) {
			mustStream(t)(b.ResetStream(ctx, store.ResetStreamParams{Consumer: "billing", Stream: "order-1",
				HighWater: 0, Policy: streamPolicy}))
		}, false},
		{"lease extended (the same claim, a newer row)", func(t *testing.T, ctx context.Context, b *pgstore.Store) {
			mustStream(t)(b.ExtendStreamLease(ctx, store.ExtendStreamLeaseParams{Consumer: "billing", Stream: "order-1",
				Sequence: 1, FencingToken: 1, LeaseTTL: 2 * time.Minute, Policy: streamPolicy}))
		}, true},
		{"deleted and created again at the same version", func(t *testing.T, ctx context.Context, b *pgstore.Store) {
			if _, err := pgstore.Pool(b).Exec(ctx, `DELETE FROM dedup_streams`); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)                    // a later creation time than a's row, as a real re-creation has
			mustClaimStream(t, ctx, b, claimStream(1, "b")) // token 1 and row_version 1 again
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			url := pgtest.URL(t)
			a := migrated(t, openStore(t, url))
			b := openStore(t, url)
			claimed := mustClaimStream(t, ctx, a, claimStream(1, "a"))
			tc.change(t, ctx, b)
			before, err := b.GetStream(ctx, "billing", "order-1")
			if err != nil {
				t.Fatal(err)
			}
			cmd := completeStream(1, claimed.FencingToken)
			want, wantErr := store.ApplyStream(&before, cmd, time.Now())
			if writes := wantErr == nil && want.Write; writes != tc.lands {
				t.Fatalf("the case is mis-built: ApplyStream on the changed row writes: %v (%v)", writes, wantErr)
			}
			res, err := a.CompleteStream(ctx, cmd)
			st := res.Stream
			if !errors.Is(err, wantErr) && (err == nil || wantErr == nil || err.Error() != wantErr.Error()) {
				t.Fatalf("complete on a changed row: %v; ApplyStream on it says %v", err, wantErr)
			}
			after, err := b.GetStream(ctx, "billing", "order-1")
			if err != nil {
				t.Fatal(err)
			}
			if !tc.lands {
				if !sameStream(after, before) {
					t.Errorf("a write that ApplyStream makes none changed the row:\n before %+v\n after  %+v", before, after)
				}
				return
			}
			// Landed, decided on the row that is there (its creation
			// time, its counters), not on a's remembered one; the clock's
			// times are the database's at the write.
			w := want.Stream
			w.UpdatedAt, w.LeaseExpiresAt, w.ExpiresAt = after.UpdatedAt, after.LeaseExpiresAt, after.ExpiresAt
			if !sameStream(after, w) || !sameStream(after, st) || after.FinishedToken != w.FinishedToken {
				t.Errorf("complete on a changed row stored %+v (answered %+v), want it decided on %+v", after, st, before)
			}
		})
	}
}

func mustFinish(t *testing.T) func(store.StreamFinishResult, error) {
	return func(_ store.StreamFinishResult, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

func mustStream(t *testing.T) func(store.Stream, error) {
	return func(_ store.Stream, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

func mustClaimStream(t *testing.T, ctx context.Context, s *pgstore.Store, p store.ClaimStreamParams) store.Stream {
	t.Helper()
	c, err := s.ClaimStream(ctx, p)
	if err != nil || c.Outcome != store.StreamAcquired {
		t.Fatalf("claim of %d by %s: %v, %v", p.Sequence, p.Owner, c.Outcome, err)
	}
	return c.Stream
}
