package store

import (
	"reflect"
	"testing"
	"time"
)

// checkHeldFinish holds HeldFinish to Apply on every step of FuzzApply: a
// Complete or Reject whose guard (HeldBy) matches the stored record must
// be the write Apply decides, column for column; one whose guard does not
// match is left to Apply by the store, so nothing is asked of it.
func (k *keyUnderFuzz) checkHeldFinish(cmd Command, stored *Record, d Decision, err error) {
	f, ok := HeldFinishOf(cmd)
	token, finishing := fencingTokenOf(cmd)
	if !finishing {
		if ok {
			k.fail("HeldFinishOf decided %T, which is not a Complete or Reject", cmd)
		}
		return
	}
	if !ok {
		k.fail("HeldFinishOf refused %s, which a holder's record accepts", describeCommand(cmd))
		return
	}
	if !HeldBy(stored, token, k.now) {
		return
	}
	switch {
	case err != nil || !d.Write:
		k.fail("the guard matched, but Apply answered %v (write %v)", err, d.Write)
	case !reflect.DeepEqual(f.Onto(*stored, Now(k.now)), d.Record):
		k.fail("the held finish writes %+v; Apply writes %+v", f.Onto(*stored, Now(k.now)), d.Record)
	}
}

func fencingTokenOf(cmd Command) (int64, bool) {
	switch c := cmd.(type) {
	case CompleteParams:
		return c.FencingToken, true
	case RejectParams:
		return c.FencingToken, true
	}
	return 0, false
}

// TestHeldFinishIsApply: for the holder's live Pending record, of any
// history (attempts, owner, digest, times), the held finish is Apply's
// record; and a record that fails the guard is not the guard's.
func TestHeldFinishIsApply(t *testing.T) {
	now := Now(time.Date(2030, 5, 6, 7, 8, 9, 123_456_789, time.UTC))
	holder := Record{Consumer: "c", Key: "k", State: Pending, Digest: []byte("d"), FencingToken: 7,
		Attempts: 3, Owner: "w-1", CreatedAt: now.Add(-time.Hour), UpdatedAt: now.Add(-time.Minute),
		LeaseExpiresAt: now.Add(-time.Second), ExpiresAt: now.Add(time.Hour)}
	cmds := []Command{
		CompleteParams{Consumer: "c", Key: "k", FencingToken: 7, Result: []byte("ok"), Policy: fuzzPolicy},
		CompleteParams{Consumer: "c", Key: "k", FencingToken: 7, Policy: fuzzPolicy},
		RejectParams{Consumer: "c", Key: "k", FencingToken: 7, Rejection: fuzzRejections[0], Policy: fuzzPolicy},
		RejectParams{Consumer: "c", Key: "k", FencingToken: 7, Rejection: fuzzRejections[2], Policy: fuzzPolicy},
	}
	for _, cmd := range cmds {
		f, ok := HeldFinishOf(cmd)
		if !ok {
			t.Fatalf("%s: no held finish", describeCommand(cmd))
		}
		d, err := Apply(&holder, cmd, now)
		if err != nil || !reflect.DeepEqual(f.Onto(holder, now), d.Record) {
			t.Errorf("%s: held %+v; Apply %+v, %v", describeCommand(cmd), f.Onto(holder, now), d.Record, err)
		}
	}
	if _, ok := HeldFinishOf(ExtendLeaseParams{Consumer: "c", Key: "k", FencingToken: 7, Policy: fuzzPolicy}); ok {
		t.Error("an ExtendLease got a held finish")
	}
	guards := []struct {
		name   string
		change func(r *Record)
		want   bool
	}{
		{"the holder's record", func(*Record) {}, true},
		{"another token", func(r *Record) { r.FencingToken = 8 }, false},
		{"completed", func(r *Record) { r.State = Completed }, false},
		{"released", func(r *Record) { r.State = Released }, false},
		{"expired", func(r *Record) { r.ExpiresAt = now }, false},
	}
	for _, g := range guards {
		r := holder
		g.change(&r)
		if got := HeldBy(&r, 7, now); got != g.want {
			t.Errorf("%s: HeldBy %v, want %v", g.name, got, g.want)
		}
	}
	if HeldBy(nil, 7, now) {
		t.Error("HeldBy of no record")
	}
}
