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

// leaser is a store derived from an Engine (store.API), which answers the
// engine's Leases directly.
type leaser interface {
	Leases(ctx context.Context, kind store.LeaseKind) ([]store.LeaseStats, error)
}

// wantUnknownLeaseKindRefused checks that an engine refuses a lease kind it
// does not know rather than summing up some other claims; a store not
// derived from an Engine has no such call to check.
func wantUnknownLeaseKindRefused(t *testing.T, s any) {
	t.Helper()
	e, ok := s.(leaser)
	if !ok {
		return
	}
	for _, kind := range []store.LeaseKind{0, store.InFlightStreamLeases + 1} {
		if got, err := e.Leases(t.Context(), kind); !errors.Is(err, store.ErrUnknownLeaseKind) || got != nil {
			t.Errorf("Leases(kind %d) = %+v, %v; want nil, ErrUnknownLeaseKind", kind, got, err)
		}
	}
}
