package client

import (
	"testing"
	"time"
)

// TestLeaseStart: hand-computed starts of a 30s lease.
func TestLeaseStart(t *testing.T) {
	sent := time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC)
	const span = 30 * time.Second
	for _, tc := range []struct {
		name     string
		answered time.Duration // after sent
		want     time.Duration // after sent
	}{
		{"a quick answer counts from the send", 20 * time.Millisecond, 0},
		{"an answer within a tenth of the span too", 3 * time.Second, 0},
		{"an answer after a wait counts from the answer less a tenth", 20 * time.Second, 17 * time.Second},
		{"a wait longer than the lease", 45 * time.Second, 42 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := leaseStart(sent, sent.Add(tc.answered), span); !got.Equal(sent.Add(tc.want)) {
				t.Errorf("leaseStart = sent+%v, want sent+%v", got.Sub(sent), tc.want)
			}
		})
	}
}
