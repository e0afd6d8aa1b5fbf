package pebblestore_test

import (
	"testing"

	"github.com/dedupd/dedupd/server/store/pebblestore"
	"github.com/dedupd/dedupd/server/store/storetest"
)

// BenchmarkCycle measures claim + complete of fresh keys at 32 callers;
// one op is one cycle. dedupctl bench --in-process pebble measures the same
// with the bench's scenarios and CPU per op. table-B/op is what Pebble's
// flushes and compactions wrote to tables per cycle.
//
//	go test -run '^$' -bench 'Cycle$' -benchtime 3s ./server/store/pebblestore/
func BenchmarkCycle(b *testing.B) {
	s := newStore(b)
	storetest.SetBenchCallers(b)
	written := pebblestore.TableBytesWritten(s)
	storetest.BenchCycle(b, s)
	b.ReportMetric(float64(pebblestore.TableBytesWritten(s)-written)/float64(b.N), "table-B/op")
}

// BenchmarkStreamCycle and BenchmarkParkCycle are the suite's stream
// benchmarks at 32 callers, each on its own stream.
//
//	go test -run '^$' -bench 'StreamCycle|ParkCycle' -benchtime 3s ./server/store/pebblestore/
func BenchmarkStreamCycle(b *testing.B) {
	s := newStore(b)
	storetest.SetBenchCallers(b)
	storetest.BenchStreamCycle(b, s)
}

func BenchmarkParkCycle(b *testing.B) {
	s := newStore(b)
	storetest.SetBenchCallers(b)
	storetest.BenchParkCycle(b, s)
}
