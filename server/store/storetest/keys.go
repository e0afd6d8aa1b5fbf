package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

func keyTests() []test {
	return []test{
		{"ConsumersIsolated", testConsumersIsolated},
		{"KeysIsolated", testKeysIsolated},
		{"UnusualKeys", testUnusualKeys},
		{"UnusualConsumers", testUnusualConsumers},
		{"RoundTrip", testRoundTrip},
	}
}

func storeTests() []test {
	return []test{
		{"Ping", testPing},
		{"CanceledContext", testCanceledContext},
	}
}

// The same key under two consumers is two records: different digests,
// owners and outcomes, each with its own token sequence.
func testConsumersIsolated(t *testing.T, s store.Store) {
	a := claimP("shared-key")
	b := claimP("shared-key")
	b.Consumer, b.Digest, b.Owner = "billing", digest2, "worker-b"
	ra := acquire(t, s, a)
	rb := acquire(t, s, b)
	if ra.FencingToken != 1 || rb.FencingToken != 1 {
		t.Fatalf("tokens %d and %d, want 1 each", ra.FencingToken, rb.FencingToken)
	}
	done := complete(t, s, completeP(ra, []byte("a's result")))
	wantUnchanged(t, s, rb)
	if res := claim(t, s, b); res.Outcome != store.InProgress {
		t.Errorf("billing's claim after orders completed: %v, want IN_PROGRESS", res.Outcome)
	}
	released := reject(t, s, rejectP(rb, retryable()))
	wantUnchanged(t, s, done)
	wantUnchanged(t, s, released)
}

// Keys that differ only in case, length or a suffix are different keys.
func testKeysIsolated(t *testing.T, s store.Store) {
	keys := []string{"k", "K", "kk", "k ", " k", "k/1", "k/10"}
	var recs []store.Record
	for _, k := range keys {
		r := acquire(t, s, claimP(k))
		if r.FencingToken != 1 || r.Key != k {
			t.Errorf("claim of %q: key %q token %d, want its own record with token 1", k, r.Key, r.FencingToken)
		}
		recs = append(recs, r)
	}
	recs[0] = complete(t, s, completeP(recs[0], []byte("only k")))
	for _, r := range recs {
		wantUnchanged(t, s, r)
	}
}

// unusualKeys are valid keys (1 to 512 bytes of UTF-8) that trip up SQL
// quoting, LIKE patterns, escaping or byte-versus-rune lengths. Several pairs
// would collide under a careless LIKE or a case-folding collation.
func unusualKeys() []string {
	return []string{
		"ключ-🔑-鍵",
		strings.Repeat("x", 512),
		strings.Repeat("🔑", 128), // 512 bytes, 128 runes
		`it's "quoted"`,
		"100%", "100_", "1000", "10%0",
		"a_c", "abc", "a%c",
		`back\slash`, `back\\slash`, `\`,
		"'); DROP TABLE records; --",
		"tab\tnew\nline",
		"*", "?", "[a-z]", "$1", ":name", "@p1",
		"Straße", "STRASSE", "strasse",
	}
}

func testUnusualKeys(t *testing.T, s store.Store) {
	keys := unusualKeys()
	for _, k := range keys {
		r := acquire(t, s, claimP(k))
		if r.Key != k || r.FencingToken != 1 {
			t.Errorf("claim of %q: key %q token %d, want the key verbatim with token 1", k, r.Key, r.FencingToken)
		}
		complete(t, s, completeP(r, []byte(k)))
	}
	// Only now read back: a key that collided with an earlier one would have
	// been IN_PROGRESS or COMPLETED above, or would replay the wrong result.
	for _, k := range keys {
		res := claim(t, s, claimP(k))
		if res.Outcome != store.AlreadyCompleted || res.Record.Key != k || string(res.Record.Result) != k {
			t.Errorf("replay of %q: %v key %q result %q", k, res.Outcome, res.Record.Key, res.Record.Result)
		}
	}
	if n, err := s.DeleteExpired(t.Context(), 1000); n != 0 || err != nil {
		t.Errorf("DeleteExpired = %d, %v; want 0, nil", n, err)
	}
}

// Consumers match ^[a-z0-9][a-z0-9._-]{0,127}$; "_" and "." next to letters
// are the LIKE and regex traps.
func testUnusualConsumers(t *testing.T, s store.Store) {
	consumers := []string{"a", "a_c", "abc", "a.c", "a-c", "0", strings.Repeat("z", 128)}
	for _, c := range consumers {
		p := claimP("k")
		p.Consumer = c
		r := acquire(t, s, p)
		if r.Consumer != c || r.FencingToken != 1 {
			t.Errorf("claim under %q: consumer %q token %d", c, r.Consumer, r.FencingToken)
		}
		complete(t, s, completeP(r, []byte(c)))
	}
	for _, c := range consumers {
		if r := lookup(t, s, c, "k"); r.Consumer != c || string(r.Result) != c {
			t.Errorf("Lookup(%q): consumer %q result %q", c, r.Consumer, r.Result)
		}
	}
}

// testRoundTrip writes every field with awkward values and reads it back
// exactly; times must be UTC with microsecond precision (checkNormal runs on
// every record the helpers see).
func testRoundTrip(t *testing.T, s store.Store) {
	p := claimP("round-trip")
	p.Digest = binary(64)
	p.Owner = "host-ü/pid 42 \"quoted\" \x01"
	p.LeaseTTL = 90 * time.Second
	held := acquire(t, s, p)
	if string(held.Digest) != string(p.Digest) || held.Owner != p.Owner {
		t.Errorf("claim stored digest %s owner %q, want %s %q",
			showBytes(held.Digest), held.Owner, showBytes(p.Digest), p.Owner)
	}
	wantSame(t, "Lookup after Claim", lookup(t, s, consumer, p.Key), held)

	rej := store.Rejection{Reason: "RATE_LIMITED", Message: "réessayez\nplus tard", Detail: binary(300), Retryable: true}
	released := reject(t, s, rejectP(held, rej))
	if !sameRejection(released.Rejection, &rej) {
		t.Errorf("stored rejection %s, want %s", showRejection(released.Rejection), showRejection(&rej))
	}
	wantSame(t, "Lookup after Reject", lookup(t, s, consumer, p.Key), released)

	again := acquire(t, s, p)
	ext := extend(t, s, extendP(again, 2*time.Minute))
	wantSame(t, "Lookup after ExtendLease", lookup(t, s, consumer, p.Key), ext)
	done := complete(t, s, completeP(ext, binary(1000)))
	wantSame(t, "Lookup after Complete", lookup(t, s, consumer, p.Key), done)
	if done.Attempts != 2 || done.FencingToken != again.FencingToken || done.Owner != p.Owner {
		t.Errorf("final record %+v: want attempt 2 under token %d", done, again.FencingToken)
	}
	for name, tm := range map[string]time.Time{"CreatedAt": done.CreatedAt, "UpdatedAt": done.UpdatedAt} {
		if tm.Location() != time.UTC || tm.Nanosecond()%1000 != 0 {
			t.Errorf("%s = %v: want UTC with microsecond precision", name, tm)
		}
	}
}

func testPing(t *testing.T, s store.Store) {
	for i := range 3 {
		if err := s.Ping(t.Context()); err != nil {
			t.Fatalf("Ping %d: %v", i+1, err)
		}
	}
}

// A call whose context is already done fails with the context's error and
// changes nothing.
func testCanceledContext(t *testing.T, s store.Store) {
	held := acquire(t, s, claimP("held"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	calls := map[string]func() error{
		"Claim":       func() error { _, err := s.Claim(ctx, claimP("new")); return err },
		"Complete":    func() error { _, err := s.Complete(ctx, completeP(held, []byte("x"))); return err },
		"Reject":      func() error { _, err := s.Reject(ctx, rejectP(held, terminal())); return err },
		"ExtendLease": func() error { _, err := s.ExtendLease(ctx, extendP(held, time.Hour)); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a canceled context: %v, want context.Canceled", name, err)
		}
	}
	wantNotFound(t, s, consumer, "new")
	wantUnchanged(t, s, held)
}
