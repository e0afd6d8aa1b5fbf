package api

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/dedupd/dedupd/server/store"
)

// TestStoreUnavailableLogIsRateLimited: an outage fails every call, but the
// WARN lines with the cause are limited (10 at once, then one a second), so
// a burst of 1,000 failed calls logs at most 10 of them. Nothing here waits
// for the clock: the burst runs in far less than the second a refill takes,
// and the limit holds even if another test used some of the burst.
func TestStoreUnavailableLogIsRateLimited(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	cause := fmt.Errorf("%w: pgstore: claim: failed to connect to `user=dedupd database=prod`", store.ErrUnavailable)
	for range 1000 {
		if err := failWith(context.Background(), log, cause, "inventory", "k"); err == nil {
			t.Fatal("failWith returned nil")
		}
	}
	if n := strings.Count(logs.String(), `msg="store unavailable"`); n > 10 {
		t.Fatalf("1000 failed calls logged %d store-unavailable lines, want at most 10", n)
	}
}
