package sqlreadtest

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
)

// maxReported bounds the disagreements one check reports.
const maxReported = 5

func checkStats[S any](ctx context.Context, t *testing.T, b Backend[S], d sqlstmt.Dialect, recs []store.Record) {
	for _, consumer := range append([]string{"", "nobody"}, consumers...) {
		got, err := b.Reads.Stats(b.Store, ctx, d, consumer)
		if err != nil {
			t.Fatalf("Stats(%q): %v", consumer, err)
		}
		// No consumer is no row, whether the store says nil or empty.
		if want := store.StatsOf(recs, consumer, now); !reflect.DeepEqual(got, want) && len(got)+len(want) > 0 {
			t.Errorf("Stats(%q)\n got %+v\nwant %+v", consumer, got, want)
		}
	}
}

func checkList[S any](ctx context.Context, t *testing.T, b Backend[S], d sqlstmt.Dialect, recs []store.Record) {
	reported, nonEmpty := 0, 0
	for _, p := range listParams(600) {
		got, err := b.Reads.List(b.Store, ctx, d, p)
		if err != nil {
			t.Fatalf("ListRecords(%+v): %v", p, err)
		}
		want := listed(recs, p)
		if len(want) > 0 {
			nonEmpty++
		}
		if gotKeys := keysOf(got); !slices.Equal(gotKeys, want) && reported < maxReported {
			reported++
			t.Errorf("ListRecords(%+v)\n got %q\nwant %q", p, gotKeys, want)
		}
	}
	// The filters must not all select nothing, or they test nothing.
	if nonEmpty < 100 {
		t.Errorf("only %d of the listings select a record", nonEmpty)
	}
}

// listed is ListRecords(p) by the rule: the matching keys in bytewise order,
// at most p.Limit.
func listed(recs []store.Record, p store.ListParams) []string {
	var out []string
	for i := range recs {
		if p.Matches(&recs[i], now) {
			out = append(out, recs[i].Key)
		}
	}
	slices.SortFunc(out, strings.Compare)
	return out[:min(len(out), p.Limit)]
}

func keysOf(recs []store.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Key)
	}
	return out
}

func checkCount[S any](ctx context.Context, t *testing.T, b Backend[S], d sqlstmt.Dialect, recs []store.Record) {
	reported := 0
	for _, p := range purgeParams(300) {
		p.CountOnly = true
		got, err := b.Reads.Purge(b.Store, ctx, d, p)
		if err != nil {
			t.Fatalf("CountPurge(%+v): %v", p, err)
		}
		if want := purged(recs, p); got != int64(len(want)) && reported < maxReported {
			reported++
			t.Errorf("CountPurge(%+v) = %d, want %d", p, got, len(want))
		}
	}
}

// purged are the indexes in recs of the records p selects, by the rule.
func purged(recs []store.Record, p store.PurgeParams) []int {
	var out []int
	for i := range recs {
		if p.Matches(&recs[i], now) {
			out = append(out, i)
		}
	}
	return out
}

// checkPurge purges in turn with a few filters, each batch large enough to
// take every match, and checks the count deleted and, through Stats, what
// is left.
func checkPurge[S any](ctx context.Context, t *testing.T, b Backend[S], d sqlstmt.Dialect, recs []store.Record) {
	left := slices.Clone(recs)
	for _, p := range []store.PurgeParams{
		{Consumer: "c1", States: []store.State{store.Pending}, UpdatedBefore: hour.Add(time.Microsecond)},
		{ExpiredOnly: true, UpdatedBefore: hour.Add(500 * time.Nanosecond)},
		{Consumer: "c2"},
		{ExpiredOnly: true},
	} {
		p.Limit = len(recs)
		got, err := b.Reads.Purge(b.Store, ctx, d, p)
		if err != nil {
			t.Fatalf("PurgeBatch(%+v): %v", p, err)
		}
		drop := purged(left, p)
		if got != int64(len(drop)) || got == 0 {
			t.Errorf("PurgeBatch(%+v) = %d, want %d (and not 0)", p, got, len(drop))
		}
		for i, at := range drop {
			left = slices.Delete(left, at-i, at-i+1)
		}
		stats, err := b.Reads.Stats(b.Store, ctx, d, "")
		if err != nil {
			t.Fatal(err)
		}
		if want := store.StatsOf(left, "", now); !reflect.DeepEqual(stats, want) {
			t.Errorf("after PurgeBatch(%+v), Stats\n got %+v\nwant %+v", p, stats, want)
		}
	}
}

func checkReady[S any](ctx context.Context, t *testing.T, b Backend[S], d sqlstmt.Dialect, streams []streamRow) {
	for _, c := range consumers {
		got, err := b.Reads.Ready(b.Store, ctx, d, c)
		if err != nil {
			t.Fatalf("ready streams of %q: %v", c, err)
		}
		var want []string
		for i := range streams {
			s := &streams[i]
			next := slices.Contains(s.parked, s.HighWater+1)
			if s.Consumer == c && store.ParkedReady(&s.Stream, next, now) {
				want = append(want, s.Stream.Stream)
			}
		}
		slices.SortFunc(want, strings.Compare)
		want = want[:min(len(want), store.ReadyCandidates)]
		if !slices.Equal(got, want) || len(want) == 0 {
			t.Errorf("ready streams of %q\n got %q\nwant %q (and not none)", c, got, want)
		}
	}
}
