package pgstore_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// A holder's finish on time is one statement, the guarded UPDATE, and
// stores what it answers; a finish the guard refuses (a stale token, a
// finished key, an expired record) is decided by reading, with Apply's
// answer.
func TestHolderFinishIsOneStatement(t *testing.T) {
	var log statementLog
	s := newTracedStore(t, &log)
	ctx := context.Background()
	finishes := []struct {
		name string
		cmd  func(token int64) store.Command
	}{
		{"complete", func(tok int64) store.Command { return completeParams("held-c", tok, "r") }},
		{"reject", func(tok int64) store.Command {
			return store.RejectParams{Consumer: "billing", Key: "held-r", FencingToken: tok, Policy: policy,
				Rejection: store.Rejection{Reason: "NO", Message: "m", Detail: []byte{0}}}
		}},
		{"release", func(tok int64) store.Command {
			return store.RejectParams{Consumer: "billing", Key: "held-x", FencingToken: tok, Policy: policy,
				Rejection: store.Rejection{Reason: "LATER", Retryable: true}}
		}},
	}
	for _, f := range finishes {
		key := keyOfFinish(f.cmd(0))
		claimed, err := s.Claim(ctx, claimParams(key))
		if err != nil {
			t.Fatal(err)
		}
		log.take()
		if _, err := s.Apply(ctx, f.cmd(claimed.Record.FencingToken+1)); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("%s with a stale token: %v, want ErrLeaseLost", f.name, err)
		}
		log.take()
		d, err := s.Apply(ctx, f.cmd(claimed.Record.FencingToken))
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		if sqls := log.take(); len(sqls) != 1 || !strings.Contains(sqls[0], "r.state = 'PENDING'") {
			t.Errorf("%s sent %q, want the one guarded UPDATE", f.name, sqls)
		}
		// Apply on the claimed record at the clock the write took is the
		// oracle: the same record, but for the columns the finish sets.
		want, _ := store.Apply(&claimed.Record, f.cmd(claimed.Record.FencingToken), d.Record.UpdatedAt)
		if !reflect.DeepEqual(d.Record, want.Record) {
			t.Errorf("%s answered %+v; Apply decides %+v", f.name, d.Record, want.Record)
		}
		if got, err := s.Lookup(ctx, "billing", key); err != nil || !reflect.DeepEqual(got, d.Record) {
			t.Errorf("%s stored %+v (%v), answered %+v", f.name, got, err, d.Record)
		}
	}

	// A record past its ExpiresAt counts as absent, though its row is not
	// reaped yet: the guard must not match it.
	short := policy
	short.ReleasedTTL = time.Millisecond
	p := claimParams("expires")
	p.Policy, p.LeaseTTL = short, time.Millisecond
	claimed, err := s.Claim(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := s.Lookup(ctx, "billing", "expires"); errors.Is(err, store.ErrNotFound) {
			break
		}
	}
	if _, err := s.Complete(ctx, completeParams("expires", claimed.Record.FencingToken, "late")); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("a Complete of an expired record: %v, want ErrLeaseLost", err)
	}
}
