package sqlitestore

import (
	"context"
	"testing"

	"github.com/dedupd/dedupd/server/store"
)

// Statements per command besides BEGIN and COMMIT: a claim of a new key is
// one, and so is a Complete, Reject (release included) or ExtendLease of a
// lease this store granted; a claim of a key with a row pays the insert's
// miss before the read and the UPDATE of what changed. A finish of a row
// the writer does not hold as stored is the read and the UPDATE.
func TestCommandStatements(t *testing.T) {
	for _, mode := range []struct {
		name     string
		maxBatch int
	}{{"GroupCommit", 0}, {"NoGroupCommit", 1}} {
		t.Run(mode.name, func(t *testing.T) {
			s, err := Open(context.Background(), t.TempDir(), Options{Sync: SyncNormal, MaxBatch: mode.maxBatch})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			checkStatements(t, s)
		})
	}
}

func checkStatements(t *testing.T, s *Store) {
	ctx := context.Background()
	claim := func(key string) store.ClaimParams {
		return store.ClaimParams{Consumer: "c", Key: key, Digest: []byte("d"), Owner: "w", Policy: testPolicy}
	}
	held := map[string]int64{}
	steps := []struct {
		name string
		run  func() error
		want int
	}{
		{"claim new key", func() error { r, err := s.Claim(ctx, claim("a")); held["a"] = r.Record.FencingToken; return err }, 1},
		{"extend lease", func() error {
			_, err := s.ExtendLease(ctx, store.ExtendLeaseParams{Consumer: "c", Key: "a", FencingToken: held["a"], Policy: testPolicy})
			return err
		}, 1},
		{"complete", func() error {
			_, err := s.Complete(ctx, store.CompleteParams{Consumer: "c", Key: "a", FencingToken: held["a"], Result: []byte("r"), Policy: testPolicy})
			return err
		}, 1},
		{"claim completed key (a miss, then the read)", func() error { _, err := s.Claim(ctx, claim("a")); return err }, 2},
		{"claim another new key", func() error { r, err := s.Claim(ctx, claim("b")); held["b"] = r.Record.FencingToken; return err }, 1},
		{"release", func() error {
			_, err := s.Reject(ctx, store.RejectParams{Consumer: "c", Key: "b", FencingToken: held["b"],
				Rejection: store.Rejection{Reason: "BUSY", Retryable: true}, Policy: testPolicy})
			return err
		}, 1},
		{"claim released key (a miss, the read, the write)", func() error { r, err := s.Claim(ctx, claim("b")); held["b"] = r.Record.FencingToken; return err }, 3},
		{"reject", func() error {
			_, err := s.Reject(ctx, store.RejectParams{Consumer: "c", Key: "b", FencingToken: held["b"],
				Rejection: store.Rejection{Reason: "BAD"}, Policy: testPolicy})
			return err
		}, 1},
	}
	steps = append(steps, struct {
		name string
		run  func() error
		want int
	}{"complete a lease the writer does not hold", func() error {
		r, err := s.Claim(ctx, claim("c"))
		if err != nil {
			return err
		}
		s.w.held = nil // as after a restart
		_, err = s.Complete(ctx, store.CompleteParams{Consumer: "c", Key: "c", FencingToken: r.Record.FencingToken, Policy: testPolicy})
		return err
	}, 3})
	for _, step := range steps {
		// Read after the call has returned: its write happened before.
		before := s.w.statements
		if err := step.run(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if n := s.w.statements - before; n != step.want {
			t.Errorf("%s ran %d statements, want %d", step.name, n, step.want)
		}
	}
}
