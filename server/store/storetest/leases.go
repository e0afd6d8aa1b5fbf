package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/dedupd/dedupd/server/store"
)

// wantLeases checks a PendingLeases or InFlightLeases answer.
func wantLeases(t *testing.T, name string, leases func(context.Context) ([]store.LeaseStats, error), want []store.LeaseStats) {
	t.Helper()
	got, err := leases(t.Context())
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(got) != len(want) {
		t.Fatalf("%s = %+v\nwant %+v", name, got, want)
	}
	for i := range got {
		if got[i].Consumer != want[i].Consumer || got[i].Held != want[i].Held || got[i].Expired != want[i].Expired ||
			!got[i].OldestUpdatedAt.Equal(want[i].OldestUpdatedAt) {
			t.Errorf("%s[%d] = %+v\nwant %+v", name, i, got[i], want[i])
		}
	}
}

// kinded is a store derived from an Engine (store.API), which answers the
// engine's kind-parametrised calls directly.
type kinded interface {
	Leases(ctx context.Context, kind store.Kind) ([]store.LeaseStats, error)
	Reap(ctx context.Context, kind store.Kind, limit int) (int, error)
	GetPolicyOf(ctx context.Context, kind store.Kind, consumer string) (store.KindPolicy, error)
	DeletePolicyOf(ctx context.Context, kind store.Kind, consumer string) (store.KindPolicy, error)
	PutPolicyOf(ctx context.Context, p store.KindPolicy) (store.KindPolicy, error)
	StatsOf(ctx context.Context, kind store.Kind, consumer string) (store.KindStats, error)
}

// wantUnknownKindRefused checks that an engine refuses a kind it does not
// know rather than reading or deleting some other rows; a store not
// derived from an Engine has no such call to check.
func wantUnknownKindRefused(t *testing.T, s any) {
	t.Helper()
	e, ok := s.(kinded)
	if !ok {
		return
	}
	for _, kind := range []store.Kind{0, store.StreamKind + 1} {
		if got, err := e.Leases(t.Context(), kind); !errors.Is(err, store.ErrUnknownKind) || got != nil {
			t.Errorf("Leases(kind %d) = %+v, %v; want nil, ErrUnknownKind", kind, got, err)
		}
		if n, err := e.Reap(t.Context(), kind, 10); !errors.Is(err, store.ErrUnknownKind) || n != 0 {
			t.Errorf("Reap(kind %d) = %d, %v; want 0, ErrUnknownKind", kind, n, err)
		}
		if got, err := e.StatsOf(t.Context(), kind, ""); !errors.Is(err, store.ErrUnknownKind) || got.Keys != nil || got.Streams != nil {
			t.Errorf("StatsOf(kind %d) = %+v, %v; want nothing, ErrUnknownKind", kind, got, err)
		}
		policy := store.KindPolicy{Kind: kind, Key: store.ConsumerPolicy{Consumer: "c"}}
		for name, call := range map[string]func() (store.KindPolicy, error){
			"PutPolicyOf":    func() (store.KindPolicy, error) { return e.PutPolicyOf(t.Context(), policy) },
			"GetPolicyOf":    func() (store.KindPolicy, error) { return e.GetPolicyOf(t.Context(), kind, "c") },
			"DeletePolicyOf": func() (store.KindPolicy, error) { return e.DeletePolicyOf(t.Context(), kind, "c") },
		} {
			if got, err := call(); !errors.Is(err, store.ErrUnknownKind) || got != (store.KindPolicy{}) {
				t.Errorf("%s(kind %d) = %+v, %v; want nothing, ErrUnknownKind", name, kind, got, err)
			}
		}
	}
}
