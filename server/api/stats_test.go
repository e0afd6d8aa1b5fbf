package api

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/store"
)

func TestJoinStats(t *testing.T) {
	at := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	k := func(c string, pending int64) store.ConsumerStats {
		return store.ConsumerStats{Consumer: c, Pending: pending, OldestPendingAt: at}
	}
	s := func(c string, n int64) store.ConsumerStreamStats {
		return store.ConsumerStreamStats{Consumer: c, Streams: n, InFlight: 1, OldestInFlightAt: at}
	}
	kp := func(c string, pending int64) *dedupv1.ConsumerStats {
		return &dedupv1.ConsumerStats{Consumer: c, Pending: pending, OldestPendingAt: timestamppb.New(at)}
	}
	both := func(c string, pending, n int64) *dedupv1.ConsumerStats {
		p := kp(c, pending)
		p.Streams, p.StreamsInFlight, p.OldestStreamClaimAt = n, 1, timestamppb.New(at)
		return p
	}
	sp := func(c string, n int64) *dedupv1.ConsumerStats {
		return &dedupv1.ConsumerStats{Consumer: c, Streams: n, StreamsInFlight: 1, OldestStreamClaimAt: timestamppb.New(at)}
	}
	for _, tc := range []struct {
		name    string
		keys    []store.ConsumerStats
		streams []store.ConsumerStreamStats
		want    []*dedupv1.ConsumerStats
	}{
		{"none", nil, nil, []*dedupv1.ConsumerStats{}},
		{"records only", []store.ConsumerStats{k("a", 1)}, nil, []*dedupv1.ConsumerStats{kp("a", 1)}},
		{"streams only", nil, []store.ConsumerStreamStats{s("a", 2)}, []*dedupv1.ConsumerStats{sp("a", 2)}},
		{"interleaved",
			[]store.ConsumerStats{k("a", 1), k("c", 3), k("e", 5)},
			[]store.ConsumerStreamStats{s("b", 2), s("c", 4), s("z", 9)},
			[]*dedupv1.ConsumerStats{kp("a", 1), sp("b", 2), both("c", 3, 4), kp("e", 5), sp("z", 9)}},
		// Bytewise: "B" (0x42) sorts before "a" (0x61).
		{"bytewise", []store.ConsumerStats{k("a", 1)}, []store.ConsumerStreamStats{s("B", 1)},
			[]*dedupv1.ConsumerStats{sp("B", 1), kp("a", 1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := joinStats(tc.keys, tc.streams)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d consumers %v, want %v", len(got), got, tc.want)
			}
			for i := range got {
				if !proto.Equal(got[i], tc.want[i]) {
					t.Errorf("[%d] got %v\nwant %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}
