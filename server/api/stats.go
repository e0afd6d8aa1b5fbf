package api

import (
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/recordpb"
	"github.com/dedupd/dedupd/server/store"
)

// joinStats merges the per-consumer counts of records and of streams, both
// sorted bytewise by consumer, into one list in that order: a consumer with
// only records, or only streams, appears once with the other counts zero.
func joinStats(keys []store.ConsumerStats, streams []store.ConsumerStreamStats) []*dedupv1.ConsumerStats {
	out := make([]*dedupv1.ConsumerStats, 0, max(len(keys), len(streams)))
	for len(keys) > 0 || len(streams) > 0 {
		c := &dedupv1.ConsumerStats{}
		switch {
		case len(streams) == 0 || (len(keys) > 0 && keys[0].Consumer < streams[0].Consumer):
			setKeyStats(c, keys[0])
			keys = keys[1:]
		case len(keys) == 0 || streams[0].Consumer < keys[0].Consumer:
			setStreamStats(c, streams[0])
			streams = streams[1:]
		default: // the same consumer in both
			setKeyStats(c, keys[0])
			setStreamStats(c, streams[0])
			keys, streams = keys[1:], streams[1:]
		}
		out = append(out, c)
	}
	return out
}

func setKeyStats(c *dedupv1.ConsumerStats, k store.ConsumerStats) {
	c.Consumer = k.Consumer
	c.Pending = k.Pending
	c.Completed = k.Completed
	c.Rejected = k.Rejected
	c.Released = k.Released
	c.PendingLeaseExpired = k.PendingLeaseExpired
	c.OldestPendingAt = recordpb.Timestamp(k.OldestPendingAt)
	c.Expired = k.Expired
}

func setStreamStats(c *dedupv1.ConsumerStats, s store.ConsumerStreamStats) {
	c.Consumer = s.Consumer
	c.Streams = s.Streams
	c.StreamsInFlight = s.InFlight
	c.StreamsLeaseExpired = s.LeaseExpired
	c.OldestStreamClaimAt = recordpb.Timestamp(s.OldestInFlightAt)
}
