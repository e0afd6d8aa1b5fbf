package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// TestReadStreamOf: the span of parked events is read only when the
// summary is asked and the stream holds some; an absent stream is
// ErrNotFound either way, and the summary is built from what the span
// found.
func TestReadStreamOf(t *testing.T) {
	ctx := context.Background()
	parkedAt := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name     string
		stored   store.Stream
		getErr   error
		parked   bool
		wantSpan bool
		want     store.ParkedSummary
		wantErr  error
	}{
		{name: "stream only", stored: store.Stream{HighWater: 3, Parked: 2}},
		{name: "summary of none parked", stored: store.Stream{HighWater: 3}, parked: true},
		{name: "summary", stored: store.Stream{HighWater: 3, Mode: store.Dense, Parked: 2, ParkedBytes: 10}, parked: true,
			wantSpan: true, want: store.ParkedSummary{Count: 2, Bytes: 10, Lowest: 5, Highest: 9, OldestParkedAt: parkedAt, GapOpen: true}},
		{name: "absent", getErr: store.ErrNotFound, parked: true, wantErr: store.ErrNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spanRead := false
			get := func(context.Context, string, string) (store.Stream, error) { return tc.stored, tc.getErr }
			span := func(context.Context, string, string) (store.ParkedSpan, error) {
				spanRead = true
				return store.ParkedSpan{Lowest: 5, Highest: 9, Oldest: parkedAt}, nil
			}
			r, err := store.ReadStreamOf(ctx, store.ReadStreamParams{Consumer: "c", Stream: "s", Parked: tc.parked}, get, span)
			if !errors.Is(err, tc.wantErr) || spanRead != tc.wantSpan {
				t.Fatalf("err %v, span read %v; want %v, %v", err, spanRead, tc.wantErr, tc.wantSpan)
			}
			if r.Parked != tc.want || err == nil && r.Stream.HighWater != 3 {
				t.Errorf("read %+v; want the stream and summary %+v", r, tc.want)
			}
		})
	}
}

// TestLiveStream: a read answers ErrNotFound for no stream and for one
// expired at now, and the stream otherwise.
func TestLiveStream(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if _, err := store.LiveStream(nil, now); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("no stream: %v, want ErrNotFound", err)
	}
	if _, err := store.LiveStream(&store.Stream{ExpiresAt: now}, now); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expiring now: %v, want ErrNotFound", err)
	}
	if st, err := store.LiveStream(&store.Stream{Stream: "s", ExpiresAt: now.Add(time.Microsecond)}, now); err != nil || st.Stream != "s" {
		t.Errorf("live: %+v, %v; want the stream", st, err)
	}
}
