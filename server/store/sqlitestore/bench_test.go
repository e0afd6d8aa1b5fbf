package sqlitestore_test

import (
	"testing"

	"github.com/dedupd/dedupd/server/store/sqlitestore"
	"github.com/dedupd/dedupd/server/store/storetest"
)

// BenchmarkCycle measures claim + complete of fresh keys, the work of one
// deduplicated request; one op is one cycle. It runs with each Sync.
//
//	go test -run '^$' -bench Cycle -benchtime 3s ./server/store/sqlitestore/
func BenchmarkCycle(b *testing.B) {
	for _, batch := range []int{0, 1} {
		for _, sync := range []string{"full", "normal"} {
			name := "group/sync=" + sync
			if batch == 1 {
				name = "single/sync=" + sync
			}
			b.Run(name, func(b *testing.B) {
				mode, err := sqlitestore.ParseSync(sync)
				if err != nil {
					b.Fatal(err)
				}
				s := openStoreWith(b, b.TempDir(), sqlitestore.Options{Sync: mode, MaxBatch: batch})
				b.Cleanup(func() { s.Close() })
				storetest.SetBenchCallers(b)
				storetest.BenchCycle(b, s)
			})
		}
	}
}

// BenchmarkClaimNew measures claims of fresh keys alone.
func BenchmarkClaimNew(b *testing.B) {
	s := newStore(b)
	storetest.SetBenchCallers(b)
	storetest.BenchClaimNew(b, s)
}

// BenchmarkStreamCycle measures claim + complete of a stream's next event
// at 32 callers, each on its own stream.
//
//	go test -run '^$' -bench StreamCycle -benchtime 3s ./server/store/sqlitestore/
func BenchmarkStreamCycle(b *testing.B) {
	s := newStore(b)
	storetest.SetBenchCallers(b)
	storetest.BenchStreamCycle(b, s)
}

// BenchmarkParkCycle measures park mode (park, claim, complete with a
// hand-off, complete) at 32 callers, each on its own stream.
//
//	go test -run '^$' -bench ParkCycle -benchtime 3s ./server/store/sqlitestore/
func BenchmarkParkCycle(b *testing.B) {
	s := newStore(b)
	storetest.SetBenchCallers(b)
	storetest.BenchParkCycle(b, s)
}
