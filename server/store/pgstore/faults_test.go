package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pgstore"
)

// injectFaults makes every insert or update of dedup_records fail, at
// random, with a serialization failure (40001, in about fail40001 of
// statements' rows) or CockroachDB's "result is ambiguous" (40003, about
// fail40003), counting each in a sequence (which no rollback undoes).
// PostgreSQL raises neither on its own at these rates; the trigger is
// test-only SQL (the product's never uses PL/pgSQL).
func injectFaults(t *testing.T, url string, fail40001, fail40003 float64) {
	t.Helper()
	execAll(t, url,
		`CREATE SEQUENCE injected_40001`,
		`CREATE SEQUENCE injected_40003`,
		fmt.Sprintf(`CREATE FUNCTION inject_fault() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE r float8 := random();
BEGIN
	IF r < %g THEN
		PERFORM nextval('injected_40001');
		RAISE EXCEPTION 'could not serialize access (injected)' USING ERRCODE = '40001';
	ELSIF r < %g THEN
		PERFORM nextval('injected_40003');
		RAISE EXCEPTION 'result is ambiguous (injected)' USING ERRCODE = '40003';
	END IF;
	RETURN NEW;
END $$`, fail40001, fail40001+fail40003),
		`CREATE TRIGGER inject_fault BEFORE INSERT OR UPDATE ON dedup_records
	FOR EACH ROW EXECUTE FUNCTION inject_fault()`)
}

// faultLedger is what the callers were told, the test's oracle.
type faultLedger struct {
	mu       sync.Mutex
	tokens   map[string]map[int64]bool // key -> fencing tokens acquired
	acked    map[string][]byte         // key -> result of the Complete that succeeded
	unknown  int                       // writes answered ErrUnavailable (outcome unknown)
	problems []string
}

func (l *faultLedger) note(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.problems = append(l.problems, fmt.Sprintf(format, args...))
}

// outcome checks an error of a write under injected faults: nil, a refusal
// of the store contract, or ErrUnavailable (the outcome unknown), never
// anything else (which the API would answer INTERNAL).
func (l *faultLedger) outcome(op string, err error) (unknown bool) {
	if err == nil {
		return false
	}
	if _, refused := store.Refused(err); refused {
		return false
	}
	if !errors.Is(err, store.ErrUnavailable) {
		l.note("%s failed with %v: neither a refusal nor ErrUnavailable (it would be INTERNAL)", op, err)
		return false
	}
	l.mu.Lock()
	l.unknown++
	l.mu.Unlock()
	return true
}

// TestInjectedFaultsKeepTheInvariants runs callers that claim shared keys
// (with short leases, and some claims abandoned, so that keys are taken
// over) and complete them, while a trigger fails writes at random with
// 40001 and 40003, with group commit on and off. A 40001 is retried whole;
// a 40003 must reach the caller as ErrUnavailable (outcome unknown), never
// as success or anything else. The invariants: no acknowledged Complete
// lost (each reads back COMPLETED with its result), no fencing token of a
// key acquired twice, no replay that differs from the acknowledged result.
func TestInjectedFaultsKeepTheInvariants(t *testing.T) {
	withEachCommitMode(t, func(t *testing.T, url string, s *pgstore.Store) {
		ctx := context.Background()
		injectFaults(t, url, 0.15, 0.05)
		l := &faultLedger{tokens: map[string]map[int64]bool{}, acked: map[string][]byte{}}
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() { faultCaller(ctx, s, l, w) })
		}
		wg.Wait()
		for _, p := range l.problems {
			t.Error(p)
		}
		for key, result := range l.acked {
			got, err := s.Lookup(ctx, "billing", key)
			if err != nil || got.State != store.Completed || !bytes.Equal(got.Result, result) {
				t.Errorf("%s: Complete acknowledged %q, stored %v %q (%v)", key, result, got.State, got.Result, err)
			}
		}
		n40001 := queryInt(t, url, `SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM injected_40001`)
		n40003 := queryInt(t, url, `SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM injected_40003`)
		t.Logf("%d injected 40001, %d injected 40003; %d writes answered outcome unknown; %d keys completed",
			n40001, n40003, l.unknown, len(l.acked))
		if n40001 == 0 || n40003 == 0 || len(l.acked) == 0 {
			t.Errorf("the run injected %d 40001 and %d 40003 and completed %d keys: it tested nothing", n40001, n40003, len(l.acked))
		}
	})
}

// faultCaller claims random keys of a small shared set and completes what
// it acquires, repeating a Complete whose outcome is unknown; one claim in
// five is abandoned, so that its key is taken over once its lease runs out.
func faultCaller(ctx context.Context, s *pgstore.Store, l *faultLedger, worker int) {
	for range 40 {
		key := fmt.Sprintf("k%02d", rand.N(16))
		res, err := s.Claim(ctx, store.ClaimParams{Consumer: "billing", Key: key, Owner: fmt.Sprint("w", worker),
			LeaseTTL: 200 * time.Millisecond, Policy: policy})
		if l.outcome("Claim", err) || err != nil {
			continue
		}
		switch res.Outcome {
		case store.AlreadyCompleted:
			l.mu.Lock()
			if acked, ok := l.acked[key]; ok && !bytes.Equal(res.Record.Result, acked) {
				l.problems = append(l.problems, fmt.Sprintf("%s replayed %q, acknowledged %q", key, res.Record.Result, acked))
			}
			l.mu.Unlock()
			continue
		case store.Acquired:
		default:
			time.Sleep(20 * time.Millisecond)
			continue
		}
		token := res.Record.FencingToken
		l.mu.Lock()
		if l.tokens[key] == nil {
			l.tokens[key] = map[int64]bool{}
		}
		if l.tokens[key][token] {
			l.problems = append(l.problems, fmt.Sprintf("%s: fencing token %d acquired twice", key, token))
		}
		l.tokens[key][token] = true
		l.mu.Unlock()
		if rand.N(5) == 0 {
			continue // abandoned: a crash before the outcome
		}
		result := fmt.Appendf(nil, "%s@%d", key, token)
		for range 5 {
			_, err := s.Complete(ctx, store.CompleteParams{Consumer: "billing", Key: key, FencingToken: token, Result: result, Policy: policy})
			if l.outcome("Complete", err) {
				continue // unknown: repeating it is safe, and tells
			}
			if err == nil {
				l.mu.Lock()
				if earlier, ok := l.acked[key]; ok && !bytes.Equal(earlier, result) {
					l.problems = append(l.problems, fmt.Sprintf("%s completed twice: %q, then %q", key, earlier, result))
				}
				l.acked[key] = result
				l.mu.Unlock()
			}
			break
		}
	}
}
