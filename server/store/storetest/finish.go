package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

func finishTests() []test {
	return []test{
		{"Complete", testComplete},
		{"CompleteRepeated", testCompleteRepeated},
		{"CompleteAfterLeaseRanOut", testCompleteAfterLeaseRanOut},
		{"RejectTerminal", testRejectTerminal},
		{"RejectRetryable", testRejectRetryable},
		{"RejectRepeated", testRejectRepeated},
		{"ExtendLease", testExtendLease},
		{"ExtendLeaseDefault", testExtendLeaseDefault},
		{"ExtendLeaseKeepsKeyHeld", testExtendLeaseKeepsKeyHeld},
		{"Errors", testFinishErrors},
	}
}

func testComplete(t *testing.T, s store.Store) {
	held := acquire(t, s, claimP("k"))
	r := complete(t, s, completeP(held, []byte("result")))
	if r.State != store.Completed || string(r.Result) != "result" || r.FencingToken != held.FencingToken ||
		r.Attempts != held.Attempts || r.Owner != held.Owner || !r.CreatedAt.Equal(held.CreatedAt) {
		t.Errorf("Complete: %+v, want COMPLETED with the holder's token, owner and result", r)
	}
	if got := r.ExpiresAt.Sub(r.UpdatedAt); got != time.Hour {
		t.Errorf("completed record kept for %v, want the completed TTL 1h", got)
	}
	wantSame(t, "Lookup after Complete", lookup(t, s, consumer, "k"), r)
}

// A holder that lost the answer to its Complete retries it: the same result
// must succeed again and leave the record as it was.
func testCompleteRepeated(t *testing.T, s store.Store) {
	held := acquire(t, s, claimP("k"))
	first := complete(t, s, completeP(held, binary(100)))
	again := complete(t, s, completeP(held, binary(100)))
	wantSame(t, "repeated Complete", again, first)
	wantUnchanged(t, s, first)
}

// The fencing token, not the clock, decides: a holder whose lease ran out
// may still finish as long as nobody took the key over.
func testCompleteAfterLeaseRanOut(t *testing.T, s store.Store) {
	_, held := acquireLapsed(t, s, "k")
	r := complete(t, s, completeP(held, []byte("late but unchallenged")))
	if r.State != store.Completed || r.FencingToken != held.FencingToken {
		t.Errorf("Complete after the lease ran out: %+v, want COMPLETED under token %d", r, held.FencingToken)
	}
}

func testRejectTerminal(t *testing.T, s store.Store) {
	testRejectKept(t, s, terminal(), store.Rejected)
}

func testRejectRetryable(t *testing.T, s store.Store) {
	testRejectKept(t, s, retryable(), store.Released)
}

// testRejectKept: a Reject with rej leaves the record in state, with the
// rejection, under the holder's token, kept for its state's TTL (1h in
// the suite's policy).
func testRejectKept(t *testing.T, s store.Store, rej store.Rejection, state store.State) {
	held := acquire(t, s, claimP("k"))
	r := reject(t, s, rejectP(held, rej))
	if r.State != state || !sameRejection(r.Rejection, &rej) || r.FencingToken != held.FencingToken {
		t.Errorf("Reject (retryable %v): %+v, want %v with %s", rej.Retryable, r, state, showRejection(&rej))
	}
	if got := r.ExpiresAt.Sub(r.UpdatedAt); got != time.Hour {
		t.Errorf("%v record kept for %v, want its TTL 1h", state, got)
	}
	wantSame(t, "Lookup after Reject", lookup(t, s, consumer, "k"), r)
}

func testRejectRepeated(t *testing.T, s store.Store) {
	for _, rej := range []store.Rejection{terminal(), retryable()} {
		t.Run(fmt.Sprintf("retryable=%v", rej.Retryable), func(t *testing.T) {
			key := fmt.Sprintf("k-%v", rej.Retryable)
			held := acquire(t, s, claimP(key))
			first := reject(t, s, rejectP(held, rej))
			again := reject(t, s, rejectP(held, rej))
			wantSame(t, "repeated Reject", again, first)
			wantUnchanged(t, s, first)
		})
	}
}

func testExtendLease(t *testing.T, s store.Store) {
	p := claimP("k")
	p.LeaseTTL = time.Minute
	held := acquire(t, s, p)
	r := extend(t, s, extendP(held, 5*time.Minute))
	if r.State != store.Pending || r.FencingToken != held.FencingToken || r.Attempts != held.Attempts ||
		r.Owner != held.Owner || !r.CreatedAt.Equal(held.CreatedAt) {
		t.Errorf("ExtendLease: %+v, want the same PENDING lease renewed", r)
	}
	if got := r.LeaseExpiresAt.Sub(r.UpdatedAt); got != 5*time.Minute {
		t.Errorf("renewed lease runs %v from now, want 5m", got)
	}
	if got := r.ExpiresAt.Sub(r.LeaseExpiresAt); got != time.Hour {
		t.Errorf("record outlives its renewed lease by %v, want the released TTL 1h", got)
	}
	if !r.LeaseExpiresAt.After(held.LeaseExpiresAt) {
		t.Errorf("lease end moved from %v to %v, want later", held.LeaseExpiresAt, r.LeaseExpiresAt)
	}
	wantSame(t, "Lookup after ExtendLease", lookup(t, s, consumer, "k"), r)
}

func testExtendLeaseDefault(t *testing.T, s store.Store) {
	held := acquire(t, s, claimP("k"))
	p := extendP(held, 0)
	p.Policy.DefaultLeaseTTL = 3 * time.Minute
	r := extend(t, s, p)
	if got := r.LeaseExpiresAt.Sub(r.UpdatedAt); got != 3*time.Minute {
		t.Errorf("extension naming no lease got %v, want the default 3m", got)
	}
}

// A heartbeat keeps others out past the original lease.
func testExtendLeaseKeepsKeyHeld(t *testing.T, s store.Store) {
	p := claimP("k")
	p.LeaseTTL = shortTTL
	held := acquire(t, s, p)
	// Even if the short lease ran out before this call, nobody took over,
	// so the extension succeeds either way: the test does not race the clock.
	r := extend(t, s, extendP(held, longTTL))
	sleepPast(shortTTL)
	p.Owner = "worker-2"
	res := claim(t, s, p)
	if res.Outcome != store.InProgress {
		t.Fatalf("claim after a heartbeat: outcome %v, want IN_PROGRESS", res.Outcome)
	}
	wantSame(t, "IN_PROGRESS record", res.Record, r)
}

// finishCall is one finishing call as a refused caller would make it: with
// an outcome or lease that differs from anything stored.
type finishCall struct {
	name string
	call func(ctx context.Context, s store.Store, r store.Record) error
}

var finishCalls = map[string]finishCall{
	"complete": {"Complete", func(ctx context.Context, s store.Store, r store.Record) error {
		_, err := s.Complete(ctx, completeP(r, []byte("other result")))
		return err
	}},
	"reject": {"Reject", func(ctx context.Context, s store.Store, r store.Record) error {
		_, err := s.Reject(ctx, rejectP(r, store.Rejection{Reason: "OTHER"}))
		return err
	}},
	"release": {"Reject(retryable)", func(ctx context.Context, s store.Store, r store.Record) error {
		_, err := s.Reject(ctx, rejectP(r, store.Rejection{Reason: "OTHER", Retryable: true}))
		return err
	}},
	"extend": {"ExtendLease", func(ctx context.Context, s store.Store, r store.Record) error {
		_, err := s.ExtendLease(ctx, extendP(r, time.Minute))
		return err
	}},
}

// finishSetups: the states in which a finishing call can be refused. The
// state "taken over" returns the old holder's record.
var finishSetups = map[string]func(t *testing.T, s store.Store, key string) store.Record{
	"completed": func(t *testing.T, s store.Store, key string) store.Record {
		return complete(t, s, completeP(acquire(t, s, claimP(key)), []byte("result")))
	},
	"rejected": func(t *testing.T, s store.Store, key string) store.Record {
		return reject(t, s, rejectP(acquire(t, s, claimP(key)), terminal()))
	},
	"released": func(t *testing.T, s store.Store, key string) store.Record {
		return reject(t, s, rejectP(acquire(t, s, claimP(key)), retryable()))
	},
	"taken over": func(t *testing.T, s store.Store, key string) store.Record {
		p, old := acquireLapsed(t, s, key)
		p.LeaseTTL = longTTL
		acquire(t, s, p)
		return old
	},
	"wrong token": func(t *testing.T, s store.Store, key string) store.Record {
		r := acquire(t, s, claimP(key))
		r.FencingToken++ // a token the store never issued
		return r
	},
	"unknown key": func(t *testing.T, s store.Store, key string) store.Record {
		return store.Record{Consumer: consumer, Key: key, FencingToken: 1}
	},
}

// testFinishErrors runs every finishing call in every state that refuses
// it: a key that already holds an outcome answers ErrAlreadyFinished; one
// the caller does not hold (released, taken over, another token, absent)
// answers ErrLeaseLost. Either way the stored record is unchanged.
func testFinishErrors(t *testing.T, s store.Store) {
	for _, state := range []string{"completed", "rejected", "released", "taken over", "wrong token", "unknown key"} {
		want := store.ErrLeaseLost
		if state == "completed" || state == "rejected" {
			want = store.ErrAlreadyFinished
		}
		for _, name := range []string{"complete", "reject", "release", "extend"} {
			call := finishCalls[name]
			t.Run(state+"/"+call.name, func(t *testing.T) {
				key := state + "/" + name
				held := finishSetups[state](t, s, key)
				if state == "unknown key" {
					wantErr(t, call.name, call.call(t.Context(), s, held), want, nil)
					wantNotFound(t, s, consumer, key)
					return
				}
				before := lookup(t, s, consumer, key)
				wantErr(t, call.name, call.call(t.Context(), s, held), want, &before)
				wantUnchanged(t, s, before)
			})
		}
	}
}
