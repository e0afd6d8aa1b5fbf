package storetest

import (
	"context"
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
