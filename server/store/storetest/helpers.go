package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

const (
	consumer = "orders"
	// longTTL outlives any test: for leases and records that must stay live.
	longTTL = 10 * time.Minute
	// shortTTL is for leases and records that must run out during a test.
	// It is long enough for a store call to finish well inside it, so a
	// test can still act on the record right after creating it when the
	// record is kept alive by a longer TTL elsewhere.
	shortTTL = 30 * time.Millisecond
)

// policy keeps everything for an hour and leases for longTTL.
func policy() store.Policy {
	return store.Policy{
		DefaultLeaseTTL: longTTL,
		CompletedTTL:    time.Hour,
		RejectedTTL:     time.Hour,
		ReleasedTTL:     time.Hour,
	}
}

// shortPolicy forgets every record soon: leases and retention are shortTTL,
// so a pending record is gone 2*shortTTL after its claim.
func shortPolicy() store.Policy {
	return store.Policy{
		DefaultLeaseTTL: shortTTL,
		CompletedTTL:    shortTTL,
		RejectedTTL:     shortTTL,
		ReleasedTTL:     shortTTL,
	}
}

// sleepPast waits until a deadline d after the last store call has surely
// passed on the store's clock, which read the time before the call returned.
// The margin absorbs scheduling delays; it never has to be exact, because
// waiting longer never changes what an expired record looks like.
func sleepPast(d time.Duration) { time.Sleep(d + d/2 + 10*time.Millisecond) }

var (
	digest1 = []byte("digest-1")
	digest2 = []byte("digest-2")
)

func terminal() store.Rejection {
	return store.Rejection{Reason: "OUT_OF_STOCK", Message: "none left", Detail: []byte{0, 1, 0, 2}}
}

func retryable() store.Rejection {
	return store.Rejection{Reason: "BUSY", Message: "try later", Detail: []byte{7, 0}, Retryable: true}
}

func claimP(key string) store.ClaimParams {
	return store.ClaimParams{
		Consumer: consumer, Key: key, Digest: digest1,
		LeaseTTL: longTTL, Owner: "worker-1", Policy: policy(),
	}
}

// The parameters of the finishing calls name the key and fencing token of
// a record the caller was handed, as a real holder would.

func completeP(r store.Record, result []byte) store.CompleteParams {
	return store.CompleteParams{Consumer: r.Consumer, Key: r.Key, FencingToken: r.FencingToken,
		Result: result, Policy: policy()}
}

func rejectP(r store.Record, rej store.Rejection) store.RejectParams {
	return store.RejectParams{Consumer: r.Consumer, Key: r.Key, FencingToken: r.FencingToken,
		Rejection: rej, Policy: policy()}
}

func extendP(r store.Record, ttl time.Duration) store.ExtendLeaseParams {
	return store.ExtendLeaseParams{Consumer: r.Consumer, Key: r.Key, FencingToken: r.FencingToken,
		LeaseTTL: ttl, Policy: policy()}
}

// The must* helpers stop the test on any error and check that every record
// a store hands out is in normal form. They call t.Fatal, so race tests,
// which run in goroutines, call the store directly instead.

func claim(t *testing.T, s store.Store, p store.ClaimParams) store.ClaimResult {
	t.Helper()
	res, err := s.Claim(t.Context(), p)
	if err != nil {
		t.Fatalf("Claim(%q, %q): %v", p.Consumer, p.Key, err)
	}
	checkNormal(t, "Claim", res.Record)
	return res
}

func acquire(t *testing.T, s store.Store, p store.ClaimParams) store.Record {
	t.Helper()
	res := claim(t, s, p)
	if res.Outcome != store.Acquired {
		t.Fatalf("Claim(%q, %q): outcome %v, want ACQUIRED", p.Consumer, p.Key, res.Outcome)
	}
	return res.Record
}

func complete(t *testing.T, s store.Store, p store.CompleteParams) store.Record {
	t.Helper()
	return holderWrote(t, "Complete", p.Key, p.FencingToken, s.Complete, p)
}

func reject(t *testing.T, s store.Store, p store.RejectParams) store.Record {
	t.Helper()
	return holderWrote(t, "Reject", p.Key, p.FencingToken, s.Reject, p)
}

func extend(t *testing.T, s store.Store, p store.ExtendLeaseParams) store.Record {
	t.Helper()
	return holderWrote(t, "ExtendLease", p.Key, p.FencingToken, s.ExtendLease, p)
}

// holderWrote is the record of a holder's write (named name, of key under
// token) that must succeed, in the normal form every answer has.
func holderWrote[P any](t *testing.T, name, key string, token int64,
	write func(context.Context, P) (store.Record, error), p P) store.Record {
	t.Helper()
	r, err := write(t.Context(), p)
	if err != nil {
		t.Fatalf("%s(%q, token %d): %v", name, key, token, err)
	}
	checkNormal(t, name, r)
	return r
}

func lookup(t *testing.T, s store.Store, consumer, key string) store.Record {
	t.Helper()
	r, err := s.Lookup(t.Context(), consumer, key)
	if err != nil {
		t.Fatalf("Lookup(%q, %q): %v", consumer, key, err)
	}
	checkNormal(t, "Lookup", r)
	return r
}

func wantNotFound(t *testing.T, s store.Store, consumer, key string) {
	t.Helper()
	r, err := s.Lookup(t.Context(), consumer, key)
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Lookup(%q, %q) = %+v, %v; want ErrNotFound", consumer, key, r, err)
	}
}

// checkNormal checks that the record's times are UTC with microsecond
// precision, the form every backend can store, so that a record returned by
// a write equals the same record read back.
func checkNormal(t *testing.T, call string, r store.Record) {
	t.Helper()
	for name, tm := range map[string]time.Time{
		"CreatedAt": r.CreatedAt, "UpdatedAt": r.UpdatedAt,
		"LeaseExpiresAt": r.LeaseExpiresAt, "ExpiresAt": r.ExpiresAt,
	} {
		if tm.IsZero() {
			t.Errorf("%s: %s is zero", call, name)
		} else if tm != store.Now(tm) {
			t.Errorf("%s: %s = %v, not UTC with microsecond precision", call, name, tm)
		}
	}
}

// wantErr checks that err matches target and, when stored is not nil, that
// it is a ConflictError carrying that record.
func wantErr(t *testing.T, call string, err, target error, stored *store.Record) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: error %v, want %v", call, err, target)
	}
	if stored == nil {
		return
	}
	var ce *store.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("%s: error %v is not a *store.ConflictError", call, err)
	}
	if d := diffRecord(ce.Record, *stored); d != "" {
		t.Errorf("%s: ConflictError.Record differs from the stored record:\n%s", call, d)
	}
}

// wantUnchanged checks that the key still holds exactly before: a refused
// call must change nothing.
func wantUnchanged(t *testing.T, s store.Store, before store.Record) {
	t.Helper()
	if d := diffRecord(lookup(t, s, before.Consumer, before.Key), before); d != "" {
		t.Errorf("record of %q changed:\n%s", before.Key, d)
	}
}

func wantSame(t *testing.T, what string, got, want store.Record) {
	t.Helper()
	if d := diffRecord(got, want); d != "" {
		t.Errorf("%s:\n%s", what, d)
	}
}

// diffRecord lists the fields in which got differs from want, or returns "".
// Byte fields compare with bytes.Equal: a backend may return nil or empty
// for an empty value, as the API cannot tell them apart either.
func diffRecord(got, want store.Record) string {
	var d []string
	add := func(field string, g, w any) { d = append(d, fmt.Sprintf("  %s: got %v, want %v", field, g, w)) }
	if got.Consumer != want.Consumer {
		add("Consumer", fmt.Sprintf("%q", got.Consumer), fmt.Sprintf("%q", want.Consumer))
	}
	if got.Key != want.Key {
		add("Key", fmt.Sprintf("%q", got.Key), fmt.Sprintf("%q", want.Key))
	}
	if got.State != want.State {
		add("State", got.State, want.State)
	}
	if !bytes.Equal(got.Digest, want.Digest) {
		add("Digest", showBytes(got.Digest), showBytes(want.Digest))
	}
	if got.FencingToken != want.FencingToken {
		add("FencingToken", got.FencingToken, want.FencingToken)
	}
	if got.Attempts != want.Attempts {
		add("Attempts", got.Attempts, want.Attempts)
	}
	if got.Owner != want.Owner {
		add("Owner", fmt.Sprintf("%q", got.Owner), fmt.Sprintf("%q", want.Owner))
	}
	if !bytes.Equal(got.Result, want.Result) {
		add("Result", showBytes(got.Result), showBytes(want.Result))
	}
	if !sameRejection(got.Rejection, want.Rejection) {
		add("Rejection", showRejection(got.Rejection), showRejection(want.Rejection))
	}
	for _, f := range []struct {
		name string
		g, w time.Time
	}{
		{"CreatedAt", got.CreatedAt, want.CreatedAt},
		{"UpdatedAt", got.UpdatedAt, want.UpdatedAt},
		{"LeaseExpiresAt", got.LeaseExpiresAt, want.LeaseExpiresAt},
		{"ExpiresAt", got.ExpiresAt, want.ExpiresAt},
	} {
		if !f.g.Equal(f.w) {
			add(f.name, f.g, f.w)
		}
	}
	return strings.Join(d, "\n")
}

func sameRejection(a, b *store.Rejection) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Reason == b.Reason && a.Message == b.Message &&
		bytes.Equal(a.Detail, b.Detail) && a.Retryable == b.Retryable
}

func showRejection(r *store.Rejection) string {
	if r == nil {
		return "<nil>"
	}
	return fmt.Sprintf("{%q %q %s retryable=%v}", r.Reason, r.Message, showBytes(r.Detail), r.Retryable)
}

// showBytes prints short values whole and long ones by length and prefix.
func showBytes(b []byte) string {
	if len(b) <= 32 {
		return fmt.Sprintf("%q", b)
	}
	return fmt.Sprintf("%d bytes %x…", len(b), b[:16])
}

// binary returns n bytes of a fixed pattern full of zeros and high bytes,
// the kind of value a text column or a careless encoding would mangle.
func binary(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		if i%3 != 0 {
			b[i] = byte(i * 7)
		}
	}
	return b
}
