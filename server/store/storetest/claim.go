package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

func claimTests() []test {
	return []test{
		{"Acquired", testAcquired},
		{"AcquiredDefaultLease", testAcquiredDefaultLease},
		{"InProgress", testInProgress},
		{"TakeoverAfterLeaseExpiry", testTakeover},
		{"ReleasedIsAcquired", testReleasedIsAcquired},
		{"CompletedReplay", testCompletedReplay},
		{"RejectedReplay", testRejectedReplay},
		{"DigestMismatch", testDigestMismatch},
	}
}

func testAcquired(t *testing.T, s store.Store) {
	p := claimP("k")
	res := claim(t, s, p)
	r := res.Record
	if res.Outcome != store.Acquired || res.RetryAfter != 0 {
		t.Fatalf("outcome %v retry after %v, want ACQUIRED and 0", res.Outcome, res.RetryAfter)
	}
	if r.Consumer != consumer || r.Key != "k" || r.State != store.Pending || r.Owner != p.Owner ||
		string(r.Digest) != string(p.Digest) || r.FencingToken != 1 || r.Attempts != 1 ||
		len(r.Result) != 0 || r.Rejection != nil {
		t.Errorf("first claim: %+v, want a PENDING record of %q with token 1, attempt 1, no outcome", r, p.Owner)
	}
	// All the times come from one reading of the store's clock.
	if !r.UpdatedAt.Equal(r.CreatedAt) {
		t.Errorf("UpdatedAt %v != CreatedAt %v", r.UpdatedAt, r.CreatedAt)
	}
	if got := r.LeaseExpiresAt.Sub(r.CreatedAt); got != p.LeaseTTL {
		t.Errorf("lease runs %v from creation, want %v", got, p.LeaseTTL)
	}
	if got := r.ExpiresAt.Sub(r.LeaseExpiresAt); got != p.Policy.ReleasedTTL {
		t.Errorf("record outlives its lease by %v, want the released TTL %v", got, p.Policy.ReleasedTTL)
	}
	wantSame(t, "Lookup after Claim", lookup(t, s, consumer, "k"), r)
}

func testAcquiredDefaultLease(t *testing.T, s store.Store) {
	p := claimP("k")
	p.LeaseTTL = 0
	p.Policy.DefaultLeaseTTL = 7 * time.Minute
	r := acquire(t, s, p)
	if got := r.LeaseExpiresAt.Sub(r.UpdatedAt); got != 7*time.Minute {
		t.Errorf("claim naming no lease got a %v lease, want the default 7m", got)
	}
}

func testInProgress(t *testing.T, s store.Store) {
	held := acquire(t, s, claimP("k"))
	p := claimP("k")
	p.Owner = "worker-2"
	res := claim(t, s, p)
	if res.Outcome != store.InProgress {
		t.Fatalf("second claim of a live lease: outcome %v, want IN_PROGRESS", res.Outcome)
	}
	if res.RetryAfter <= 0 || res.RetryAfter > longTTL {
		t.Errorf("RetryAfter %v, want within (0, %v]", res.RetryAfter, longTTL)
	}
	wantSame(t, "IN_PROGRESS returns the holder's record", res.Record, held)
	wantUnchanged(t, s, held)
}

// acquireLapsed claims key with a short lease and waits until it has run
// out; it returns the claim and the record it acquired.
func acquireLapsed(t *testing.T, s store.Store, key string) (store.ClaimParams, store.Record) {
	t.Helper()
	p := claimP(key)
	p.LeaseTTL = shortTTL
	held := acquire(t, s, p)
	sleepPast(shortTTL)
	return p, held
}

func testTakeover(t *testing.T, s store.Store) {
	p, old := acquireLapsed(t, s, "k")
	p.Owner, p.LeaseTTL = "worker-2", longTTL
	r := acquire(t, s, p)
	if r.FencingToken <= old.FencingToken || r.Attempts != old.Attempts+1 {
		t.Errorf("takeover: token %d attempts %d, want token > %d and attempts %d",
			r.FencingToken, r.Attempts, old.FencingToken, old.Attempts+1)
	}
	if r.State != store.Pending || r.Owner != "worker-2" || !r.CreatedAt.Equal(old.CreatedAt) {
		t.Errorf("takeover: %+v, want PENDING, owner worker-2, created at %v", r, old.CreatedAt)
	}
	if got := r.LeaseExpiresAt.Sub(r.UpdatedAt); got != longTTL {
		t.Errorf("takeover lease runs %v, want %v", got, longTTL)
	}
	// The old holder is fenced off.
	_, err := s.Complete(t.Context(), completeP(old, []byte("late")))
	wantErr(t, "Complete by the old holder", err, store.ErrLeaseLost, &r)
	wantUnchanged(t, s, r)
}

func testReleasedIsAcquired(t *testing.T, s store.Store) {
	first := acquire(t, s, claimP("k"))
	reject(t, s, rejectP(first, retryable()))
	p := claimP("k")
	p.Owner = "worker-2"
	r := acquire(t, s, p)
	if r.FencingToken <= first.FencingToken || r.Attempts != 2 || r.Owner != "worker-2" ||
		r.State != store.Pending || r.Rejection != nil || len(r.Result) != 0 {
		t.Errorf("claim of a released key: %+v, want PENDING, token > %d, attempt 2, no rejection",
			r, first.FencingToken)
	}
	wantSame(t, "Lookup after reacquiring", lookup(t, s, consumer, "k"), r)
}

// results are stored and replayed byte for byte, whatever they hold.
var results = []struct {
	name  string
	value []byte
}{
	{"empty", []byte{}},
	{"nil", nil},
	{"text", []byte(`{"order":42,"status":"shipped"}`)},
	{"zeros", []byte{0, 0, 0}},
	{"all byte values", allBytes()},
	{"64KiB binary", binary(64 << 10)},
}

func allBytes() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

func testCompletedReplay(t *testing.T, s store.Store) {
	for i, tc := range results {
		t.Run(tc.name, func(t *testing.T) {
			key := fmt.Sprintf("k-%d", i)
			done := complete(t, s, completeP(acquire(t, s, claimP(key)), tc.value))
			p := claimP(key)
			p.Owner = "worker-2"
			res := claim(t, s, p)
			if res.Outcome != store.AlreadyCompleted || res.RetryAfter != 0 {
				t.Fatalf("claim of a completed key: outcome %v retry %v, want COMPLETED, 0", res.Outcome, res.RetryAfter)
			}
			wantSame(t, "replayed record", res.Record, done)
			wantSame(t, "Lookup", lookup(t, s, consumer, key), done)
		})
	}
}

func testRejectedReplay(t *testing.T, s store.Store) {
	for i, rej := range []store.Rejection{
		{Reason: "R"},
		terminal(),
		{Reason: "ÉPUISÉ", Message: "plus de stock — désolé 🙁", Detail: allBytes()},
		{Reason: "TOO_BIG", Message: "", Detail: binary(64 << 10)},
	} {
		t.Run(fmt.Sprintf("rejection-%d", i), func(t *testing.T) {
			key := fmt.Sprintf("k-%d", i)
			done := reject(t, s, rejectP(acquire(t, s, claimP(key)), rej))
			if done.State != store.Rejected || !sameRejection(done.Rejection, &rej) {
				t.Fatalf("Reject: state %s rejection %s, want REJECTED %s",
					done.State, showRejection(done.Rejection), showRejection(&rej))
			}
			res := claim(t, s, claimP(key))
			if res.Outcome != store.AlreadyRejected {
				t.Fatalf("claim of a rejected key: outcome %v, want REJECTED", res.Outcome)
			}
			wantSame(t, "replayed record", res.Record, done)
			wantSame(t, "Lookup", lookup(t, s, consumer, key), done)
		})
	}
}

// stateSetups bring a fresh key, claimed with the given digest, into each
// state a claim can meet, and return its record. "lapsed" is a pending
// record whose lease ran out: its caller must sleepPast(shortTTL) first.
var stateSetups = []struct {
	name  string
	setup func(t *testing.T, s store.Store, key string, digest []byte) store.Record
}{
	{"pending", func(t *testing.T, s store.Store, key string, digest []byte) store.Record {
		p := claimP(key)
		p.Digest = digest
		return acquire(t, s, p)
	}},
	{"lapsed", func(t *testing.T, s store.Store, key string, digest []byte) store.Record {
		p := claimP(key)
		p.Digest, p.LeaseTTL = digest, shortTTL
		return acquire(t, s, p)
	}},
	{"completed", func(t *testing.T, s store.Store, key string, digest []byte) store.Record {
		p := claimP(key)
		p.Digest = digest
		return complete(t, s, completeP(acquire(t, s, p), []byte("result")))
	}},
	{"rejected", func(t *testing.T, s store.Store, key string, digest []byte) store.Record {
		p := claimP(key)
		p.Digest = digest
		return reject(t, s, rejectP(acquire(t, s, p), terminal()))
	}},
	{"released", func(t *testing.T, s store.Store, key string, digest []byte) store.Record {
		p := claimP(key)
		p.Digest = digest
		return reject(t, s, rejectP(acquire(t, s, p), retryable()))
	}},
}

// testDigestMismatch claims every state with a digest other than the stored
// one, including empty against non-empty both ways: each claim must fail,
// carry the stored record, and change nothing.
func testDigestMismatch(t *testing.T, s store.Store) {
	pairs := []struct {
		name            string
		stored, claimed []byte
	}{
		{"different", digest1, digest2},
		{"stored empty", nil, digest1},
		{"claimed empty", digest1, []byte{}},
	}
	type probe struct {
		name    string
		before  store.Record
		claimed []byte
	}
	var probes []probe
	for _, st := range stateSetups {
		for _, pair := range pairs {
			key := fmt.Sprintf("%s/%s", st.name, pair.name)
			probes = append(probes, probe{key, st.setup(t, s, key, pair.stored), pair.claimed})
		}
	}
	sleepPast(shortTTL) // let the "lapsed" leases run out; nothing else is short
	for _, pr := range probes {
		t.Run(pr.name, func(t *testing.T) {
			p := claimP(pr.before.Key)
			p.Digest = pr.claimed
			res, err := s.Claim(t.Context(), p)
			if !errors.Is(err, store.ErrDigestMismatch) {
				t.Fatalf("Claim = %v, %v; want ErrDigestMismatch", res.Outcome, err)
			}
			wantErr(t, "Claim", err, store.ErrDigestMismatch, &pr.before)
			wantUnchanged(t, s, pr.before)
		})
	}
}
