package sqlitestore_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

var policy = store.Policy{
	DefaultLeaseTTL: 30 * time.Second,
	CompletedTTL:    time.Hour,
	RejectedTTL:     time.Hour,
	ReleasedTTL:     time.Minute,
}

func openStore(t testing.TB, dir string) *sqlitestore.Store {
	t.Helper()
	return openStoreWith(t, dir, sqlitestore.Options{})
}

func openStoreWith(t testing.TB, dir string, opts sqlitestore.Options) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return s
}

// newStore opens a store on a fresh directory, closed when the test ends.
func newStore(t testing.TB) *sqlitestore.Store {
	s := openStore(t, t.TempDir())
	t.Cleanup(func() { s.Close() })
	return s
}

func claim(t testing.TB, s store.Store, key string, digest []byte) store.ClaimResult {
	t.Helper()
	res, err := s.Claim(context.Background(), store.ClaimParams{
		Consumer: "c", Key: key, Digest: digest, Owner: "w1", Policy: policy,
	})
	if err != nil {
		t.Fatalf("Claim(%s): %v", key, err)
	}
	return res
}

func complete(t testing.TB, s store.Store, key string, token int64, result []byte) store.Record {
	t.Helper()
	rec, err := s.Complete(context.Background(), store.CompleteParams{
		Consumer: "c", Key: key, FencingToken: token, Result: result, Policy: policy,
	})
	if err != nil {
		t.Fatalf("Complete(%s): %v", key, err)
	}
	return rec
}

func TestClaimCompleteLookupRoundTrip(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()

	first := claim(t, s, "k", []byte("d1"))
	if first.Outcome != store.Acquired || first.Record.FencingToken != 1 {
		t.Fatalf("first claim = %v token %d, want ACQUIRED token 1", first.Outcome, first.Record.FencingToken)
	}
	got, err := s.Lookup(ctx, "c", "k")
	if err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	assertSameRecord(t, got, first.Record)

	second := claim(t, s, "k", []byte("d1"))
	if second.Outcome != store.InProgress || second.RetryAfter <= 0 {
		t.Fatalf("second claim = %v retry %v, want IN_PROGRESS with a retry", second.Outcome, second.RetryAfter)
	}

	done := complete(t, s, "k", 1, []byte("result"))
	replay := claim(t, s, "k", []byte("d1"))
	if replay.Outcome != store.AlreadyCompleted || !bytes.Equal(replay.Record.Result, []byte("result")) {
		t.Fatalf("replay = %v %q, want COMPLETED \"result\"", replay.Outcome, replay.Record.Result)
	}
	assertSameRecord(t, replay.Record, done)

	_, err = s.Claim(ctx, store.ClaimParams{Consumer: "c", Key: "k", Digest: []byte("d2"), Policy: policy})
	var conflict *store.ConflictError
	if !errors.Is(err, store.ErrDigestMismatch) || !errors.As(err, &conflict) {
		t.Fatalf("claim with another digest: %v, want a ConflictError for ErrDigestMismatch", err)
	}
	assertSameRecord(t, conflict.Record, done)
}

func TestEmptyAndNilBytesRoundTrip(t *testing.T) {
	s := newStore(t)
	res := claim(t, s, "k", nil)
	complete(t, s, "k", res.Record.FencingToken, []byte{})
	got, err := s.Lookup(context.Background(), "c", "k")
	if err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	if len(got.Digest) != 0 || len(got.Result) != 0 || got.Rejection != nil {
		t.Fatalf("got digest %q result %q rejection %v, want all empty", got.Digest, got.Result, got.Rejection)
	}
	if again := claim(t, s, "k", []byte{}); again.Outcome != store.AlreadyCompleted {
		t.Fatalf("claim with empty digest = %v, want COMPLETED", again.Outcome)
	}
}

func TestRejectionRoundTrip(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for _, tc := range []struct {
		key       string
		rejection store.Rejection
		state     store.State
	}{
		{"final", store.Rejection{Reason: "BAD", Message: "no", Detail: []byte{1, 2}}, store.Rejected},
		{"retry", store.Rejection{Retryable: true}, store.Released},
	} {
		res := claim(t, s, tc.key, []byte("d"))
		rec, err := s.Reject(ctx, store.RejectParams{
			Consumer: "c", Key: tc.key, FencingToken: res.Record.FencingToken, Rejection: tc.rejection, Policy: policy,
		})
		if err != nil {
			t.Fatalf("Reject(%s): %v", tc.key, err)
		}
		got, err := s.Lookup(ctx, "c", tc.key)
		if err != nil {
			t.Fatalf("Lookup(%s): %v", tc.key, err)
		}
		assertSameRecord(t, got, rec)
		if got.State != tc.state || got.Rejection == nil {
			t.Fatalf("%s: state %s rejection %v, want %s with a rejection", tc.key, got.State, got.Rejection, tc.state)
		}
	}
	// A released key is claimed again with the next token.
	if res := claim(t, s, "retry", []byte("d")); res.Outcome != store.Acquired || res.Record.FencingToken != 2 {
		t.Fatalf("claim after release = %v token %d, want ACQUIRED token 2", res.Outcome, res.Record.FencingToken)
	}
}

func TestExtendLease(t *testing.T) {
	s := newStore(t)
	res := claim(t, s, "k", []byte("d"))
	rec, err := s.ExtendLease(context.Background(), store.ExtendLeaseParams{
		Consumer: "c", Key: "k", FencingToken: 1, LeaseTTL: time.Hour, Policy: policy,
	})
	if err != nil {
		t.Fatalf("ExtendLease: %v", err)
	}
	if !rec.LeaseExpiresAt.After(res.Record.LeaseExpiresAt) {
		t.Fatalf("lease %v not extended past %v", rec.LeaseExpiresAt, res.Record.LeaseExpiresAt)
	}
	_, err = s.ExtendLease(context.Background(), store.ExtendLeaseParams{
		Consumer: "c", Key: "k", FencingToken: 7, Policy: policy,
	})
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("ExtendLease with a stale token: %v, want ErrLeaseLost", err)
	}
}

func TestExpiredRecordsAreGoneAndDeletedInBatches(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	short := store.Policy{DefaultLeaseTTL: time.Millisecond, ReleasedTTL: time.Millisecond}
	for _, key := range []string{"a", "b", "c"} {
		if _, err := s.Claim(ctx, store.ClaimParams{Consumer: "c", Key: key, Policy: short}); err != nil {
			t.Fatal(err)
		}
	}
	claim(t, s, "live", []byte("d"))
	time.Sleep(5 * time.Millisecond)

	if _, err := s.Lookup(ctx, "c", "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Lookup of an expired record: %v, want ErrNotFound", err)
	}
	if n, err := s.DeleteExpired(ctx, 2); err != nil || n != 2 {
		t.Fatalf("DeleteExpired(2) = %d, %v; want 2", n, err)
	}
	if n, err := s.DeleteExpired(ctx, 10); err != nil || n != 1 {
		t.Fatalf("DeleteExpired(10) = %d, %v; want the 1 left", n, err)
	}
	if _, err := s.Lookup(ctx, "c", "live"); err != nil {
		t.Fatalf("live record after DeleteExpired: %v", err)
	}
}

func TestConcurrentClaimsAcquireOnce(t *testing.T) {
	s := newStore(t)
	var acquired atomic.Int32
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			res, err := s.Claim(context.Background(), store.ClaimParams{
				Consumer: "c", Key: "k", Digest: []byte("d"), Policy: policy,
			})
			if err != nil {
				t.Error(err)
				return
			}
			if res.Outcome == store.Acquired {
				acquired.Add(1)
			}
		})
	}
	wg.Wait()
	if n := acquired.Load(); n != 1 {
		t.Fatalf("%d claims acquired, want 1", n)
	}
}

func TestCancelledContext(t *testing.T) {
	s := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Claim(ctx, store.ClaimParams{Consumer: "c", Key: "k", Policy: policy}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Claim: %v, want context.Canceled", err)
	}
	if _, err := s.Lookup(ctx, "c", "k"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lookup: %v, want context.Canceled", err)
	}
	if _, err := s.Lookup(context.Background(), "c", "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the cancelled claim left a record: %v", err)
	}
}

func assertSameRecord(t testing.TB, got, want store.Record) {
	t.Helper()
	same := got.Consumer == want.Consumer && got.Key == want.Key && got.State == want.State &&
		bytes.Equal(got.Digest, want.Digest) && got.FencingToken == want.FencingToken &&
		got.Attempts == want.Attempts && got.Owner == want.Owner && bytes.Equal(got.Result, want.Result) &&
		sameRejection(got.Rejection, want.Rejection) &&
		got.CreatedAt.Equal(want.CreatedAt) && got.UpdatedAt.Equal(want.UpdatedAt) &&
		got.LeaseExpiresAt.Equal(want.LeaseExpiresAt) && got.ExpiresAt.Equal(want.ExpiresAt)
	if !same {
		t.Fatalf("records differ:\n got %+v\nwant %+v", got, want)
	}
}

func sameRejection(a, b *store.Rejection) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Reason == b.Reason && a.Message == b.Message && bytes.Equal(a.Detail, b.Detail) && a.Retryable == b.Retryable
}

// TestSyncReachesSQLite: the durability an operator chose is the one SQLite
// runs with, and the default is the one that survives a power loss.
func TestSyncReachesSQLite(t *testing.T) {
	for _, tc := range []struct {
		flag string
		want int // PRAGMA synchronous: 1 NORMAL, 2 FULL
	}{{"full", 2}, {"normal", 1}, {"", 2}} {
		t.Run(tc.flag, func(t *testing.T) {
			var opts sqlitestore.Options
			if tc.flag != "" {
				sync, err := sqlitestore.ParseSync(tc.flag)
				if err != nil {
					t.Fatal(err)
				}
				opts.Sync = sync
			}
			s := openStoreWith(t, t.TempDir(), opts)
			defer s.Close()
			got, err := sqlitestore.WriterSynchronous(s)
			if err != nil || got != tc.want {
				t.Fatalf("PRAGMA synchronous = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
	if _, err := sqlitestore.ParseSync("FULL "); err == nil {
		t.Fatal(`ParseSync("FULL ") accepted it`)
	}
}
