package storecopy_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pebblestore"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
	"github.com/dedupd/dedupd/server/store/storecopy"
)

var (
	ctx    = context.Background()
	policy = store.Policy{DefaultLeaseTTL: time.Hour, CompletedTTL: time.Hour, RejectedTTL: time.Hour, ReleasedTTL: time.Hour}
	sp     = store.StreamPolicy{DefaultLeaseTTL: time.Hour}
)

// fill writes records in every state, an expired one, streams and
// policies into a SQLite store, and returns the keys of consumer "orders".
func fill(t *testing.T, s *sqlitestore.Store) []string {
	t.Helper()
	var keys []string
	for i := range 17 {
		key := fmt.Sprintf("k%02d", i)
		keys = append(keys, key)
		res, err := s.Claim(ctx, store.ClaimParams{Consumer: "orders", Key: key, Digest: []byte(key), Owner: "w", Policy: policy})
		if err != nil {
			t.Fatal(err)
		}
		tok := res.Record.FencingToken
		switch i % 4 {
		case 0:
			_, err = s.Complete(ctx, store.CompleteParams{Consumer: "orders", Key: key, FencingToken: tok, Result: []byte("r" + key), Policy: policy})
		case 1:
			_, err = s.Reject(ctx, store.RejectParams{Consumer: "orders", Key: key, FencingToken: tok,
				Rejection: store.Rejection{Reason: "bad", Message: "m", Detail: []byte{1}}, Policy: policy})
		case 2:
			_, err = s.Reject(ctx, store.RejectParams{Consumer: "orders", Key: key, FencingToken: tok,
				Rejection: store.Rejection{Reason: "later", Retryable: true}, Policy: policy})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	short := policy
	short.DefaultLeaseTTL, short.ReleasedTTL = time.Millisecond, time.Millisecond
	if _, err := s.Claim(ctx, store.ClaimParams{Consumer: "payments", Key: "gone", Policy: short}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		st := fmt.Sprint("stream-", i)
		res, err := s.ClaimStream(ctx, store.ClaimStreamParams{Consumer: "orders", Stream: st, Sequence: 1, Policy: sp})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if _, err := s.CompleteStream(ctx, store.CompleteStreamParams{Consumer: "orders", Stream: st, Sequence: 1,
				FencingToken: res.Stream.FencingToken, Policy: sp}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for seq := int64(2); seq <= 4; seq++ { // parked behind stream-1's in-flight 1
		if _, err := s.ClaimStream(ctx, store.ClaimStreamParams{Consumer: "orders", Stream: "stream-1", Sequence: seq,
			Park: true, Payload: []byte(fmt.Sprint("payload-", seq)), Policy: sp}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.PutPolicy(ctx, store.ConsumerPolicy{Consumer: "orders", CompletedTTL: 72 * time.Hour, RequireDigest: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutStreamPolicy(ctx, store.ConsumerStreamPolicy{Consumer: "orders", Mode: store.Versions, MaxParked: 7, GapTimeout: time.Minute, OnGapTimeout: store.GapSkip}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // "gone" expires
	return keys
}

func openSQLite(t *testing.T, dir string) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(ctx, dir, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openForCopy(t *testing.T, dir string) *pebblestore.Store {
	t.Helper()
	s, err := pebblestore.OpenForCopy(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A copy holds what the source holds: the same counts and digest, read
// back independently, and the same answers to every read of the contract.
func TestCopyIsVerifiedAndServesTheSameAnswers(t *testing.T) {
	src := openSQLite(t, t.TempDir())
	keys := fill(t, src)
	dstDir := t.TempDir()
	dst := openForCopy(t, dstDir)
	sum, err := storecopy.Copy(ctx, src, dst, "src", 4, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Records != 18 || sum.Streams != 5 || sum.Parked != 3 || sum.Policies != 1 || sum.StreamPolicies != 1 {
		t.Fatalf("copied %+v, want 18 records (the expired one too), 5 streams, 3 parked events, 1 policy, 1 stream policy", sum)
	}
	dst.Close()
	served, err := pebblestore.Open(ctx, dstDir, pebblestore.Options{})
	if err != nil {
		t.Fatalf("opening the finished copy: %v", err)
	}
	defer served.Close()
	for _, key := range keys {
		want, wErr := src.Lookup(ctx, "orders", key)
		got, gErr := served.Lookup(ctx, "orders", key)
		if !reflect.DeepEqual(got, want) || !errors.Is(gErr, wErr) {
			t.Errorf("Lookup %s: copy %+v, %v; source %+v, %v", key, got, gErr, want, wErr)
		}
	}
	if _, err := served.Lookup(ctx, "payments", "gone"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the expired record is live in the copy: %v", err)
	}
	for _, call := range []func(store.Backend) (any, error){
		func(s store.Backend) (any, error) { return s.Stats(ctx, "") },
		func(s store.Backend) (any, error) { return s.ListPolicies(ctx) },
		func(s store.Backend) (any, error) { return s.GetStreamPolicy(ctx, "orders") },
		func(s store.Backend) (any, error) {
			return s.ListStreams(ctx, store.ListStreamsParams{Consumer: "orders", Limit: 10})
		},
		func(s store.Backend) (any, error) {
			return s.ListParked(ctx, store.ListParkedParams{Consumer: "orders", Stream: "stream-1", Limit: 10})
		},
		func(s store.Backend) (any, error) { return s.GetParkedSummary(ctx, "orders", "stream-1") },
	} {
		want, wErr := call(src)
		got, gErr := call(served)
		if !reflect.DeepEqual(got, want) || wErr != nil || gErr != nil {
			t.Errorf("copy answers %+v (%v), source %+v (%v)", got, gErr, want, wErr)
		}
	}
	// The expired record's fencing token still counts in the copy.
	res, err := served.Claim(ctx, store.ClaimParams{Consumer: "payments", Key: "gone", Policy: policy})
	if err != nil || res.Outcome != store.Acquired || res.Record.FencingToken != 2 {
		t.Fatalf("claim of the expired key in the copy = %+v, %v; want ACQUIRED with token 2", res, err)
	}
}

// failingSource fails its exports once a number of them have run, as an
// interrupted copy would (a kill, a full disk).
type failingSource struct {
	storecopy.Source
	left  int
	first []string // the cursor of each ExportRecords call
}

func (f *failingSource) ExportRecords(ctx context.Context, afterConsumer, afterKey string, limit int) ([]store.Record, error) {
	f.first = append(f.first, afterConsumer+"/"+afterKey)
	if f.left--; f.left < 0 {
		return nil, errors.New("interrupted")
	}
	return f.Source.ExportRecords(ctx, afterConsumer, afterKey, limit)
}

func TestInterruptedCopyResumesAndIsRefusedUntilFinished(t *testing.T) {
	src := openSQLite(t, t.TempDir())
	fill(t, src)
	dstDir := t.TempDir()
	dst := openForCopy(t, dstDir)
	log := slog.New(slog.DiscardHandler)
	if _, err := storecopy.Copy(ctx, &failingSource{Source: src, left: 2}, dst, "src", 4, log); err == nil {
		t.Fatal("the interrupted copy succeeded")
	}
	dst.Close()
	if _, err := pebblestore.Open(ctx, dstDir, pebblestore.Options{}); !errors.Is(err, pebblestore.ErrCopyUnfinished) {
		t.Fatalf("serving an unfinished copy: %v, want ErrCopyUnfinished", err)
	}
	dst = openForCopy(t, dstDir)
	defer dst.Close()
	if _, err := storecopy.Copy(ctx, src, dst, "another source", 4, log); err == nil || !strings.Contains(err.Error(), "unfinished copy of src") {
		t.Fatalf("resuming from another source: %v, want a refusal", err)
	}
	resumed := &failingSource{Source: src, left: 1 << 30}
	sum, err := storecopy.Copy(ctx, resumed, dst, "src", 4, log)
	if err != nil {
		t.Fatal(err)
	}
	if want := "orders/k07"; resumed.first[0] != want {
		t.Fatalf("the resumed copy started after %q, want after %q (the last committed chunk)", resumed.first[0], want)
	}
	want, err := storecopy.Summarize(ctx, src, 0)
	if err != nil || sum != want {
		t.Fatalf("resumed copy %+v, source %+v (%v)", sum, want, err)
	}
}

// A source changed between an interruption and the resumption (served
// again meanwhile) makes the copy differ; verification must catch it.
func TestVerificationCatchesASourceChangedBetweenRuns(t *testing.T) {
	srcDir := t.TempDir()
	src := openSQLite(t, srcDir)
	fill(t, src)
	dst := openForCopy(t, t.TempDir())
	defer dst.Close()
	log := slog.New(slog.DiscardHandler)
	if _, err := storecopy.Copy(ctx, &failingSource{Source: src, left: 2}, dst, "src", 4, log); err == nil {
		t.Fatal("the interrupted copy succeeded")
	}
	if _, err := src.Claim(ctx, store.ClaimParams{Consumer: "orders", Key: "a-new-key", Policy: policy}); err != nil {
		t.Fatal(err)
	}
	_, err := storecopy.Copy(ctx, src, dst, "src", 4, log)
	if err == nil || !strings.Contains(err.Error(), "verification failed") {
		t.Fatalf("copy of a changed source: %v, want a verification failure", err)
	}
	if _, resuming, _ := dst.CopyState(); !resuming {
		t.Fatal("a copy that failed verification was marked finished")
	}
}
