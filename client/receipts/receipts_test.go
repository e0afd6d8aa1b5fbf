package receipts

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

func TestMigrateIsIdempotentAndVersioned(t *testing.T) {
	forEach(t, func(t *testing.T, b backend, db DB) {
		ctx := context.Background()
		if err := Migrate(ctx, db, b.dialect, ""); err != nil {
			t.Fatalf("second Migrate: %v", err)
		}
		var versions, version int
		err := db.InTx(ctx, func(ctx context.Context, tx Tx) error {
			_, err := tx.QueryRow(ctx, `SELECT count(*), max(version) FROM dedupd_receipts_schema`, nil, &versions, &version)
			return err
		})
		if err != nil || versions != 1 || version != SchemaVersion {
			t.Fatalf("schema table holds %d rows, max %d (%v); want the one row %d", versions, version, err, SchemaVersion)
		}
		if err := Migrate(ctx, db, b.dialect, "receipts; DROP TABLE effects"); err == nil {
			t.Fatal("Migrate took a table name that is not an identifier")
		}
	})
}

// TestModelOfEffects races holders with distinct tokens over a few keys,
// every effect recorded in the receipt's transaction. Whatever the
// interleaving, each key has exactly one effect and one receipt, with the
// same token and result, and exactly one Run per key succeeded; every
// other ended in ErrStale.
func TestModelOfEffects(t *testing.T) {
	forEach(t, func(t *testing.T, b backend, db DB) {
		const keys, holders = 6, 4
		r := &Receipts{DB: db, Dialect: b.dialect, Consumer: "c", TTL: time.Hour, MaxAttempts: 50}
		var mu sync.Mutex
		won := map[string][]int64{}
		var wg sync.WaitGroup
		var failures []error
		for k := range keys {
			key := fmt.Sprintf("k%d", k)
			for h := range holders {
				token := int64(k*holders + h + 1)
				wg.Go(func() {
					time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
					_, err := r.Run(context.Background(), key, token, effectOf(b.dialect, key, token, fmt.Sprint("r", token)))
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						won[key] = append(won[key], token)
					case !errors.Is(err, ErrStale):
						failures = append(failures, err)
					}
				})
			}
		}
		wg.Wait()
		if len(failures) > 0 {
			t.Fatalf("Run failed other than ErrStale: %v", failures)
		}
		for k := range keys {
			key := fmt.Sprintf("k%d", k)
			s := stateOf(t, db, b.dialect, key)
			if len(won[key]) != 1 || s.effects != 1 || s.receipts != 1 ||
				s.effectToken != won[key][0] || s.receiptToken != won[key][0] ||
				s.effectResult != fmt.Sprint("r", won[key][0]) || s.receiptResult != s.effectResult {
				t.Errorf("%s: winners %v, state %+v; want one winner whose effect and receipt agree", key, won[key], s)
			}
		}
	})
}

// TestStaleHolderRollsBack: two holders run their effects on one key at
// once, the newer one held open mid-transaction. The one whose receipt
// comes second is stale: it must end in ErrStale with its effect rolled
// back, whatever it waited on (a row lock, a serialization failure,
// SQLite's write lock), and a later holder loses the same way.
func TestStaleHolderRollsBack(t *testing.T) {
	forEach(t, func(t *testing.T, b backend, db DB) {
		r := &Receipts{DB: db, Dialect: b.dialect, Consumer: "c", TTL: time.Hour, MaxAttempts: 50}
		ctx := context.Background()
		written, release := make(chan struct{}), make(chan struct{})
		var writtenOnce sync.Once // a retried transaction runs the effect again
		newer := make(chan error, 1)
		go func() {
			_, err := r.Run(ctx, "E1", 2, func(ctx context.Context, tx Tx) ([]byte, error) {
				res, err := effectOf(b.dialect, "E1", 2, "new")(ctx, tx)
				if err == nil {
					err = r.Write(ctx, tx, "E0", 2, res) // the same transaction writes a second receipt first
				}
				writtenOnce.Do(func() { close(written) })
				<-release
				return res, err
			})
			newer <- err
		}()
		<-written
		stale := make(chan error, 1)
		go func() {
			_, err := r.Run(ctx, "E1", 1, effectOf(b.dialect, "E1", 1, "old"))
			stale <- err
		}()
		// Let the stale holder reach its write (or wait for the lock) before
		// the newer one commits.
		time.Sleep(50 * time.Millisecond)
		close(release)
		newerErr, staleErr := <-newer, <-stale
		// A receipt is fenced by being first: whichever transaction commits
		// its receipt first stands, and the other, arriving second, is the
		// stale one. Which commits first depends on the interleaving (the
		// newer's receipt is written after it is released; at SERIALIZABLE
		// SSI may abort either), so the test asks for exactly one winner,
		// ErrStale for the other, and one effect with the winner's receipt.
		wantToken, wantResult := int64(2), "new"
		switch {
		case newerErr == nil && errors.Is(staleErr, ErrStale):
		case staleErr == nil && errors.Is(newerErr, ErrStale):
			wantToken, wantResult = 1, "old"
		default:
			t.Fatalf("newer holder = %v, stale holder = %v; want one to commit and the other ErrStale", newerErr, staleErr)
		}
		s := stateOf(t, db, b.dialect, "E1")
		if s.effects != 1 || s.effectToken != wantToken || s.receiptToken != wantToken || s.receiptResult != wantResult {
			t.Fatalf("state %+v; want only the winner's (token %d) effect and receipt", s, wantToken)
		}
		// Later, with nothing in flight: the same answer, the same rollback.
		if _, err := r.Run(ctx, "E1", 3, effectOf(b.dialect, "E1", 3, "later")); !errors.Is(err, ErrStale) {
			t.Fatalf("a later holder = %v, want ErrStale", err)
		}
		if s := stateOf(t, db, b.dialect, "E1"); s.effects != 1 {
			t.Fatalf("%d effects after a later holder lost, want 1", s.effects)
		}
	})
}

// TestPruneAndExpiry writes receipts at known times and checks, against
// hand-computed sets: an expired receipt does not settle and may be
// replaced; prune deletes exactly the expired ones, in batches.
func TestPruneAndExpiry(t *testing.T) {
	forEach(t, func(t *testing.T, b backend, db DB) {
		ctx := context.Background()
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		now := base
		r := &Receipts{DB: db, Dialect: b.dialect, Consumer: "c", TTL: time.Hour, Now: func() time.Time { return now }}
		// e0..e4 at base (expire at base+1h); l0..l2 at base+90m.
		for i := range 5 {
			if _, err := r.Run(ctx, fmt.Sprint("e", i), 1, effectOf(b.dialect, fmt.Sprint("e", i), 1, "x")); err != nil {
				t.Fatal(err)
			}
		}
		now = base.Add(90 * time.Minute)
		for i := range 3 {
			if _, err := r.Run(ctx, fmt.Sprint("l", i), 1, effectOf(b.dialect, fmt.Sprint("l", i), 1, "y")); err != nil {
				t.Fatal(err)
			}
		}
		if found, _, _, err := r.Lookup(ctx, "e0"); err != nil || found {
			t.Fatalf("expired e0 settles as found=%v (%v); want not found", found, err)
		}
		if found, tok, res, err := r.Lookup(ctx, "l0"); err != nil || !found || tok != 1 || string(res) != "y" {
			t.Fatalf("live l0 = %v %d %q (%v)", found, tok, res, err)
		}
		// A new holder replaces the expired e4 (and its effect counts again:
		// the record it stood for is gone too).
		if _, err := r.Run(ctx, "e4", 7, effectOf(b.dialect, "e4", 7, "z")); err != nil {
			t.Fatalf("writing over an expired receipt: %v", err)
		}
		n, err := r.Prune(ctx, 2)
		if err != nil || n != 4 {
			t.Fatalf("Prune = %d (%v); want the 4 expired e0..e3", n, err)
		}
		for key, want := range map[string]int{"e0": 0, "e1": 0, "e2": 0, "e3": 0, "e4": 1, "l0": 1, "l1": 1, "l2": 1} {
			if s := stateOf(t, db, b.dialect, key); s.receipts != want {
				t.Errorf("%s: %d receipts after prune, want %d", key, s.receipts, want)
			}
		}
		if n, err := r.Prune(ctx, 2); err != nil || n != 0 {
			t.Fatalf("second Prune = %d (%v); want 0", n, err)
		}
	})
}

func TestBadInput(t *testing.T) {
	r := &Receipts{Consumer: "c", TTL: time.Hour}
	for name, err := range map[string]error{
		"zero token": r.Write(context.Background(), nil, "k", 0, nil),
		"no ttl":     (&Receipts{Consumer: "c"}).Write(context.Background(), nil, "k", 1, nil),
		"bad table":  (&Receipts{Consumer: "c", TTL: time.Hour, Table: "a b"}).Write(context.Background(), nil, "k", 1, nil),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
