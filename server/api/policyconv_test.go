package api

import (
	"testing"
	"time"
)

func TestShortDurations(t *testing.T) {
	for d, want := range map[time.Duration]string{
		72 * time.Hour: "72h", 30 * time.Minute: "30m", 90 * time.Second: "1m30s",
		time.Hour + 30*time.Minute: "1h30m", 1500 * time.Millisecond: "1.5s", time.Hour + time.Second: "1h0m1s",
	} {
		if got := short(d); got != want {
			t.Errorf("short(%v) = %q, want %q", d, got, want)
		}
	}
}
