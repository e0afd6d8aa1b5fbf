package claimwait

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// Watch refuses past each bound, counted over what is watched now; Leave
// gives the room back.
func TestBounds(t *testing.T) {
	r := New(Options{MaxWait: time.Minute, PerKey: 2, PerConsumer: 3, PerServer: 4})
	key := func(consumer, name string) Key { return Key{Consumer: consumer, Name: name} }
	steps := []struct {
		k    Key
		want bool
	}{
		{key("a", "x"), true},
		{key("a", "x"), true},
		{key("a", "x"), false},                              // per key
		{Key{Consumer: "a", Name: "x", Stream: true}, true}, // a stream is another name
		{key("a", "y"), false},                              // per consumer
		{key("b", "x"), true},
		{key("c", "x"), false}, // per server
	}
	var joined []*Waiter
	for i, s := range steps {
		w := r.Join()
		if got := w.Watch(s.k); got != s.want {
			t.Fatalf("step %d: Watch(%v) = %v, want %v", i, s.k, got, s.want)
		}
		joined = append(joined, w)
	}
	if n, refused := r.Waiting(), r.Refused(); n != 4 || refused != 3 {
		t.Fatalf("Waiting = %d, Refused = %d; want 4 and 3", n, refused)
	}
	for _, w := range joined {
		w.Leave()
	}
	if n := r.Waiting(); n != 0 || len(r.keys) != 0 || len(r.consumers) != 0 {
		t.Fatalf("after Leave: %d waiting, %d keys, %d consumers kept", n, len(r.keys), len(r.consumers))
	}
	if w := r.Join(); !w.Watch(key("c", "x")) {
		t.Fatal("room given back by Leave is not reusable")
	}
}

func TestClamp(t *testing.T) {
	r := New(Options{MaxWait: time.Minute})
	for _, tt := range []struct{ asked, want time.Duration }{
		{0, 0}, {-time.Second, 0}, {time.Second, time.Second}, {time.Hour, time.Minute},
	} {
		if got := r.Clamp(tt.asked); got != tt.want {
			t.Errorf("Clamp(%s) = %s, want %s", tt.asked, got, tt.want)
		}
	}
	var off *Registry
	if off.Clamp(time.Hour) != 0 || off.On() || New(Options{}).On() {
		t.Error("a nil registry or a zero MaxWait grants a wait")
	}
}

// countingAdmission counts the slot's hand-backs and retakes, and has
// none free for the first busy Resume calls.
type countingAdmission struct {
	held              bool
	releases, resumes int
	busy              int
}

func (a *countingAdmission) Release() {
	if a.held {
		a.held = false
		a.releases++
	}
}

func (a *countingAdmission) Resume() bool {
	a.resumes++
	if a.busy > 0 {
		a.busy--
		return false
	}
	a.held = true
	return true
}

// Await claims once at once, then once per wake, gives the slot back
// before each sleep and holds it for each claim; a claim that fails ends
// the wait with its error.
func TestAwaitClaimsOncePerWake(t *testing.T) {
	r := New(Options{MaxWait: time.Hour, Poll: time.Hour})
	k := Key{Consumer: "c", Name: "k"}
	w := r.Join()
	defer w.Leave()
	w.Watch(k)
	adm := &countingAdmission{held: true, busy: 2}
	ctx := WithAdmission(context.Background(), adm)
	claims := 0
	errDone := errors.New("fifth claim fails")
	err := w.Await(ctx, time.Hour, func(context.Context) (Busy, error) {
		claims++
		if !adm.held {
			t.Errorf("claim %d runs without an admission slot", claims)
		}
		if claims == 5 {
			return Busy{}, errDone
		}
		go r.Wake(k) // wakes the sleep that follows (a wake is kept until then)
		return Busy{Held: true}, nil
	})
	if !errors.Is(err, errDone) || claims != 5 {
		t.Fatalf("Await = %v after %d claims, want the fifth claim's error", err, claims)
	}
	// Four sleeps, each after giving the slot back; the first two retakes
	// found none free, so six Resume calls in all.
	if adm.releases != 4 || adm.resumes != 6 {
		t.Fatalf("%d releases and %d resumes, want 4 and 6", adm.releases, adm.resumes)
	}
}

// A cancelled caller ends the wait at once with the context's error; a
// wait that ends answers with the last claim, without claiming again.
func TestAwaitEnds(t *testing.T) {
	r := New(Options{MaxWait: time.Hour, Poll: time.Hour})
	for _, cancelled := range []bool{true, false} {
		t.Run(fmt.Sprint("cancelled=", cancelled), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w := r.Join()
			defer w.Leave()
			wait := time.Hour
			if !cancelled {
				wait = 20 * time.Millisecond
			}
			claims := 0
			err := w.Await(ctx, wait, func(context.Context) (Busy, error) {
				claims++
				if cancelled {
					cancel()
				}
				return Busy{Held: true}, nil
			})
			if want := map[bool]error{true: context.Canceled, false: nil}[cancelled]; !errors.Is(err, want) || claims != 1 {
				t.Fatalf("Await = %v after %d claims, want %v after 1", err, claims, want)
			}
		})
	}
}

// Stop ends a wait in progress, which answers what its last claim found,
// and grants no new one.
func TestStop(t *testing.T) {
	r := New(Options{MaxWait: time.Hour, Poll: time.Hour})
	w := r.Join()
	defer w.Leave()
	if !w.Watch(Key{Consumer: "c", Name: "k"}) {
		t.Fatal("Watch refused before Stop")
	}
	claims := 0
	err := w.Await(context.Background(), time.Hour, func(context.Context) (Busy, error) {
		claims++
		go r.Stop()
		return Busy{Held: true}, nil
	})
	if err != nil || claims != 1 {
		t.Fatalf("Await = %v after %d claims; want nil after 1", err, claims)
	}
	if r.Join().Watch(Key{Consumer: "c", Name: "other"}) {
		t.Fatal("Watch granted after Stop")
	}
	r.Stop() // a second Stop is harmless
}

// Admissions put in a context one after the other are given back and
// taken again together: a call resumes only with all of them, and holds
// none of them when one is not free.
func TestAdmissionsTogether(t *testing.T) {
	slot, reply := &countingAdmission{held: true}, &countingAdmission{held: true, busy: 1}
	ctx := WithAdmission(WithAdmission(context.Background(), slot), reply)
	a := admissionOf(ctx)
	a.Release()
	if slot.held || reply.held {
		t.Fatal("Release left one held")
	}
	if a.Resume() || slot.held || reply.held {
		t.Fatalf("Resume with the reply bytes not free = true, or left slot %v reply %v held", slot.held, reply.held)
	}
	if !a.Resume() || !slot.held || !reply.held {
		t.Fatal("Resume with both free did not take both")
	}
}
