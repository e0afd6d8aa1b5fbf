package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/internal/testing/pgtest"
	"github.com/dedupd/dedupd/server/store"
)

// Nothing listens on port 1: every connection attempt is refused at once.
const unreachableURL = "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=2"

func TestUnreachableDatabaseIsUnavailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s := openStore(t, unreachableURL) // the pool is lazy: Open succeeds

	calls := map[string]func() error{
		"Claim": func() error { _, err := s.Claim(ctx, claimParams("k")); return err },
		"Complete": func() error {
			_, err := s.Complete(ctx, store.CompleteParams{Consumer: "c", Key: "k", FencingToken: 1, Policy: policy})
			return err
		},
		"Lookup":            func() error { _, err := s.Lookup(ctx, "c", "k"); return err },
		"DeleteExpired":     func() error { _, err := s.DeleteExpired(ctx, 10); return err },
		"Ping":              func() error { return s.Ping(ctx) },
		"Migrate":           func() error { _, err := s.Migrate(ctx); return err },
		"PendingMigrations": func() error { _, err := s.PendingMigrations(ctx); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s on an unreachable database: %v; want ErrUnavailable", name, err)
		} else if !strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("%s: the error %q lost its cause", name, err)
		}
	}
}

func TestCanceledContextReturnsItsError(t *testing.T) {
	s := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Claim(ctx, claimParams("k")); err != context.Canceled {
		t.Errorf("Claim with a canceled context: %v; want context.Canceled", err)
	}
	if _, err := s.Lookup(ctx, "billing", "k"); err != context.Canceled {
		t.Errorf("Lookup with a canceled context: %v; want context.Canceled", err)
	}
}

// A deadline that runs out while the store waits on a row lock is reported
// as the deadline, not as a database failure.
func TestDeadlineDuringLockWait(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	s := migrated(t, openStore(t, url))
	if _, err := s.Claim(ctx, claimParams("locked")); err != nil {
		t.Fatal(err)
	}

	tx := lockHolder(t, ctx, url)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM dedup_records WHERE key = 'locked' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}

	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err := s.Complete(short, store.CompleteParams{Consumer: "billing", Key: "locked", FencingToken: 1, Policy: policy})
	if err != context.DeadlineExceeded {
		t.Errorf("Complete blocked past its deadline: %v; want context.DeadlineExceeded", err)
	}
}

// Writers of one hot key lose compare-and-set races to each other. The store
// must retry each from its read until it succeeds.
func TestContendedKeyIsRetried(t *testing.T) {
	ctx := context.Background()
	var log statementLog
	s := newTracedStore(t, &log)
	if _, err := s.Claim(ctx, claimParams("hot")); err != nil {
		t.Fatal(err)
	}
	log.take()

	const workers, extensions = 32, 4
	var wg sync.WaitGroup
	errs := make(chan error, workers*extensions)
	for range workers {
		wg.Go(func() {
			for range extensions {
				_, err := s.ExtendLease(ctx, store.ExtendLeaseParams{Consumer: "billing", Key: "hot", FencingToken: 1, Policy: policy})
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	// The contract allows ErrUnavailable for a key that stays contended
	// past the retry budget, which 32 writers on one row on a loaded
	// 2-core machine can reach; anything else is a failure, and most
	// extensions must get through.
	contended := 0
	for err := range errs {
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("ExtendLease under contention: %v", err)
		}
		contended++
	}
	if contended > workers*extensions/4 {
		t.Errorf("%d of %d extensions gave up contended: the retry does not get them through", contended, workers*extensions)
	}

	attempts := 0
	for _, sql := range log.take() {
		if strings.Contains(sql, "row_version, statement_timestamp()") {
			attempts++
		}
	}
	t.Logf("%d extensions took %d attempts", workers*extensions, attempts)
	if attempts <= workers*extensions {
		t.Errorf("%d attempts for %d extensions: no lost compare-and-set was retried", attempts, workers*extensions)
	}
}

// Exactly one of many concurrent claims of a free key acquires it.
func TestConcurrentClaimsOfOneKey(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	const workers = 32
	var wg sync.WaitGroup
	outcomes := make(chan store.Outcome, workers)
	for range workers {
		wg.Go(func() {
			res, err := s.Claim(ctx, claimParams("race"))
			if err != nil {
				t.Errorf("Claim: %v", err)
				return
			}
			if res.Record.FencingToken != 1 {
				t.Errorf("claim saw fencing token %d, want 1", res.Record.FencingToken)
			}
			outcomes <- res.Outcome
		})
	}
	wg.Wait()
	close(outcomes)
	acquired := 0
	for o := range outcomes {
		if o == store.Acquired {
			acquired++
		} else if o != store.InProgress {
			t.Errorf("outcome %v, want Acquired or InProgress", o)
		}
	}
	if acquired != 1 {
		t.Errorf("%d claims acquired the key, want exactly 1", acquired)
	}
}

// lockHolder begins a transaction on a connection of its own to url, for a
// test to hold row locks in while the store waits on them; both end with
// the test (a rollback after a Commit is a no-op).
func lockHolder(t *testing.T, ctx context.Context, url string) pgx.Tx {
	t.Helper()
	holder, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Close(ctx) })
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	return tx
}
