package pebblestore

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// engineEvents counts what Pebble reports of itself through its event
// listener, for the engine metrics (metrics.go).
type engineEvents struct {
	misuses atomic.Int64
	// stalls counts write stalls: Pebble holding every write back because
	// flushes or compactions fell behind. stalled is the time spent in
	// those that ended, and stallStart the start of one in progress (Unix
	// nanoseconds, 0 when none); Pebble reports a stall's begin and end in
	// turn, never two at once.
	stalls, stalled, stallStart atomic.Int64
}

func (e *engineEvents) listener() *pebble.EventListener {
	return &pebble.EventListener{
		PossibleAPIMisuse: e.reportMisuse,
		WriteStallBegin: func(pebble.WriteStallBeginInfo) {
			e.stalls.Add(1)
			e.stallStart.Store(time.Now().UnixNano())
		},
		WriteStallEnd: func() {
			if start := e.stallStart.Swap(0); start != 0 {
				e.stalled.Add(time.Now().UnixNano() - start)
			}
		},
	}
}

// stallSeconds is the time writes have spent stalled, the one in progress
// included.
func (e *engineEvents) stallSeconds() float64 {
	total := e.stalled.Load()
	if start := e.stallStart.Load(); start != 0 {
		total += time.Now().UnixNano() - start
	}
	return time.Duration(total).Seconds()
}

// reportMisuse counts and logs a possible misuse of Pebble's API that it
// reports (indexes.go keeps index entries from giving any), with the key's
// table and not the key, which holds a caller's consumer and key.
func (e *engineEvents) reportMisuse(info pebble.PossibleAPIMisuseInfo) {
	e.misuses.Add(1)
	table := "none"
	if len(info.UserKey) > 0 {
		table = strconv.QuoteRune(rune(info.UserKey[0]))
	}
	quietLogger{}.Errorf("pebblestore: possible misuse of Pebble (%s) on an entry of table %s; see indexes.go", info.Kind, table)
}
