package claimwait

import (
	"context"
	"testing"
	"time"

	"github.com/dedupd/dedupd/internal/testing/pgtest"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pgstore"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
	"github.com/dedupd/dedupd/server/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// The decorator must not change an answer: the whole suite runs through
// it, on both stores, with waiters on every key it could wake.
func TestConformance(t *testing.T) {
	r := New(Options{MaxWait: time.Minute})
	t.Run("sqlite", func(t *testing.T) {
		storetest.RunAll(t, func(t *testing.T) store.Backend {
			inner, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s := store.NewAPI(Notify(inner, r))
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
	t.Run("postgres", func(t *testing.T) {
		storetest.RunAll(t, func(t *testing.T) store.Backend {
			inner, err := pgstore.Open(context.Background(), pgtest.URL(t), pgstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := inner.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			s := store.NewAPI(Notify(inner, r))
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
}

var (
	testPolicy   = store.Policy{DefaultLeaseTTL: time.Hour, CompletedTTL: time.Hour, RejectedTTL: time.Hour, ReleasedTTL: time.Hour}
	streamPolicy = store.StreamPolicy{DefaultLeaseTTL: time.Hour, StreamTTL: time.Hour}
)

// Each call that can end a wait wakes the waiters of its key or stream
// once it succeeded, and a call that failed wakes nobody.
func TestNotifyWakes(t *testing.T) {
	ctx := context.Background()
	key := Key{Consumer: "c", Name: "k"}
	stream := Key{Consumer: "c", Name: "s", Stream: true}
	claimKey := func(t *testing.T, s store.Backend) int64 {
		res, err := s.Claim(ctx, store.ClaimParams{Consumer: "c", Key: "k", Policy: testPolicy})
		if err != nil {
			t.Fatal(err)
		}
		return res.Record.FencingToken
	}
	claimStream := func(t *testing.T, s store.Backend) int64 {
		res, err := s.ClaimStream(ctx, store.ClaimStreamParams{Consumer: "c", Stream: "s", Sequence: 1, Policy: streamPolicy})
		if err != nil {
			t.Fatal(err)
		}
		return res.Stream.FencingToken
	}
	tests := []struct {
		name string
		on   Key
		// call claims what it needs and makes the call; token is added to
		// the holder's token (1 makes it wrong, so that the call fails).
		call func(t *testing.T, s store.Backend, skew int64) error
	}{
		{"Complete", key, func(t *testing.T, s store.Backend, skew int64) error {
			_, err := s.Complete(ctx, store.CompleteParams{Consumer: "c", Key: "k", FencingToken: claimKey(t, s) + skew, Policy: testPolicy})
			return err
		}},
		{"Reject", key, func(t *testing.T, s store.Backend, skew int64) error {
			_, err := s.Reject(ctx, store.RejectParams{Consumer: "c", Key: "k", FencingToken: claimKey(t, s) + skew,
				Rejection: store.Rejection{Reason: "R", Retryable: true}, Policy: testPolicy})
			return err
		}},
		{"ApplyBatch", key, func(t *testing.T, s store.Backend, skew int64) error {
			return s.ApplyBatch(ctx, store.BatchParams{Commands: []store.Command{
				store.CompleteParams{Consumer: "c", Key: "k", FencingToken: claimKey(t, s) + skew, Policy: testPolicy}}})[0].Err
		}},
		{"DeleteRecord", key, func(t *testing.T, s store.Backend, skew int64) error {
			if skew == 0 {
				claimKey(t, s)
			}
			_, err := s.DeleteRecord(ctx, "c", "k")
			return err
		}},
		{"CompleteStream", stream, func(t *testing.T, s store.Backend, skew int64) error {
			_, err := s.CompleteStream(ctx, store.CompleteStreamParams{Consumer: "c", Stream: "s", Sequence: 1,
				FencingToken: claimStream(t, s) + skew, Policy: streamPolicy})
			return err
		}},
		{"RejectStream", stream, func(t *testing.T, s store.Backend, skew int64) error {
			_, err := s.RejectStream(ctx, store.RejectStreamParams{Consumer: "c", Stream: "s", Sequence: 1,
				FencingToken: claimStream(t, s) + skew, Rejection: store.Rejection{Reason: "R"}, Policy: streamPolicy})
			return err
		}},
		{"ReleaseStream", stream, func(t *testing.T, s store.Backend, skew int64) error {
			_, err := s.ReleaseStream(ctx, store.ReleaseStreamParams{Consumer: "c", Stream: "s", Sequence: 1,
				FencingToken: claimStream(t, s) + skew, Policy: streamPolicy})
			return err
		}},
		{"ResetStream", stream, func(t *testing.T, s store.Backend, skew int64) error {
			claimStream(t, s)
			_, err := s.ResetStream(ctx, store.ResetStreamParams{Consumer: "c", Stream: "s", HighWater: 5,
				DryRun: skew != 0, Policy: streamPolicy}) // a dry run changes nothing: no wake
			return err
		}},
	}
	for _, tt := range tests {
		for _, fail := range []bool{false, true} {
			name := tt.name
			if fail {
				name += " failed"
			}
			t.Run(name, func(t *testing.T) {
				inner, err := sqlitestore.Open(ctx, t.TempDir(), sqlitestore.Options{})
				if err != nil {
					t.Fatal(err)
				}
				r := New(Options{MaxWait: time.Minute})
				s := store.NewAPI(Notify(inner, r))
				defer s.Close()
				w, other := r.Join(), r.Join()
				defer w.Leave()
				defer other.Leave()
				w.Watch(tt.on)
				other.Watch(Key{Consumer: "c", Name: tt.on.Name, Stream: !tt.on.Stream}) // same name, other kind
				skew := int64(0)
				if fail {
					skew = 1
				}
				callErr := tt.call(t, s, skew)
				if (callErr != nil) != fail && tt.name != "ResetStream" {
					t.Fatalf("call error %v, want failure %v", callErr, fail)
				}
				if woken := len(w.woken) == 1; woken == fail {
					t.Errorf("woken = %v after a call that failed = %v", woken, fail)
				}
				if len(other.woken) != 0 {
					t.Error("a waiter on the other kind of name was woken")
				}
			})
		}
	}
}

// Every command is decided (wakes or not) and every Engine method too.
func TestEveryCommandIsDecided(t *testing.T) {
	storetest.CommandsDecided(t, func(cmd any) bool { _, decided := Wakes(cmd); return decided })
	storetest.EngineMethodsDecided(t, map[string]string{
		"Apply": "wakes on Wakes", "ApplyBatch": "wakes on Wakes per item", "ApplyStream": "wakes on Wakes",
		"LookupBatch": "Reader: ends no wait", "ListRecords": "Reader", "ReadStream": "Reader", "ListStreams": "Reader",
		"ListParked": "Reader", "ListOpenGaps": "Reader", "ParkedTotals": "Reader",
		"Reap": "Upkeep: the waiters' polls see it",
		"Ping": "Upkeep", "Close": "Upkeep",
		"StatsOf": "Reports", "Leases": "Reports",
		"Purge":       "Reports: the waiters' polls see it",
		"PutPolicyOf": "Reports", "GetPolicyOf": "Reports", "DeletePolicyOf": "Reports",
		"ListPolicies": "Reports"})
}
