package sqlitestore

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// BenchmarkDecide compares, in one process, every command's statements
// before decide.go (selectUpsert) with decideAt on cycles of new keys: 32 claims in one transaction, then their 32
// Completes in another, as group commit runs them. cpu-µs/cycle is the
// process's CPU time (getrusage), which a busy machine inflates less than
// the wall clock.
//
//	go test -run '^$' -bench Decide -count 5 ./server/store/sqlitestore/
func BenchmarkDecide(b *testing.B) {
	for _, path := range []struct {
		name   string
		decide func(w *writer, consumer, key string, cmd store.Command, now time.Time) (store.Decision, error)
	}{
		{"select-upsert", selectUpsert},
		{"decide", (*writer).decideAt},
	} {
		b.Run(path.name, func(b *testing.B) {
			w := openTestWriter(b)
			const group = 32
			tokens := make([]int64, group)
			cpu := processCPU()
			b.ResetTimer()
			for start := 0; start < b.N; start += group {
				n := min(group, b.N-start)
				key := func(i int) string { return "key-" + strconv.Itoa(start+i) }
				inTx(b, w, func() error {
					for i := range n {
						d, err := path.decide(w, "bench", key(i), store.ClaimParams{Consumer: "bench", Key: key(i),
							Digest: []byte("0123456789abcdef0123456789abcdef"), Owner: "worker", Policy: testPolicy}, store.Now(time.Now()))
						if err != nil || d.Outcome != store.Acquired {
							b.Fatalf("claim: %v %v", d.Outcome, err)
						}
						tokens[i] = d.Record.FencingToken
					}
					return nil
				})
				inTx(b, w, func() error {
					for i := range n {
						if _, err := path.decide(w, "bench", key(i), store.CompleteParams{Consumer: "bench", Key: key(i),
							FencingToken: tokens[i], Result: []byte(`{"status":"ok","id":12345}`), Policy: testPolicy}, store.Now(time.Now())); err != nil {
							b.Fatalf("complete: %v", err)
						}
					}
					return nil
				})
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(time.Microsecond)/float64(b.N), "cpu-µs/cycle")
		})
	}
}

// selectUpsert is how every command ran before decide.go: the read,
// Apply, and the upsert of every column.
func selectUpsert(w *writer, consumer, key string, cmd store.Command, now time.Time) (store.Decision, error) {
	stored, err := scanRecord(w.selectRecord.QueryRowContext(context.Background(), consumer, key), consumer, key)
	if err != nil {
		return store.Decision{}, err
	}
	d, err := store.Apply(stored, cmd, now)
	if err != nil || !d.Write {
		return d, err
	}
	_, err = w.upsertRecord.ExecContext(context.Background(), recordArgs(&d.Record)...)
	return d, err
}

// processCPU is the user and system time of the process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
