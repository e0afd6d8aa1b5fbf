package pebblestore

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// After a concurrent workload of every kind of write, the indexes must
// hold exactly one entry per row as the rows say: an expiry entry at each
// row's ExpiresAt, a pending entry (with the lease) for each Pending record
// and each in-flight stream, and nothing else. The oracle is the rows
// themselves, read back after the workload, and again once every entry
// has been through a flush and a compaction: index entries are deleted
// with SingleDelete (indexes.go), and an entry Set over itself would come
// back there, or make Pebble report a misuse.
func TestIndexesMatchRows(t *testing.T) {
	s, err := Open(context.Background(), t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	short := store.Policy{DefaultLeaseTTL: 5 * time.Millisecond, CompletedTTL: 20 * time.Millisecond,
		RejectedTTL: 20 * time.Millisecond, ReleasedTTL: 10 * time.Millisecond}
	sp := store.StreamPolicy{DefaultLeaseTTL: 5 * time.Millisecond, StreamTTL: 20 * time.Millisecond}
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range 300 {
				key := fmt.Sprint("k", rng.IntN(6))
				tok := int64(rng.IntN(4))
				switch rng.IntN(10) {
				case 0, 1:
					_, _ = s.Claim(ctx, store.ClaimParams{Consumer: "c", Key: key, Policy: short})
				case 2:
					_, _ = s.Complete(ctx, store.CompleteParams{Consumer: "c", Key: key, FencingToken: tok, Policy: short})
				case 3:
					_, _ = s.Reject(ctx, store.RejectParams{Consumer: "c", Key: key, FencingToken: tok,
						Rejection: store.Rejection{Retryable: rng.IntN(2) == 0}, Policy: short})
				case 4:
					_, _ = s.ExtendLease(ctx, store.ExtendLeaseParams{Consumer: "c", Key: key, FencingToken: tok, Policy: short})
				case 5:
					_, _ = s.DeleteRecord(ctx, "c", key)
				case 6:
					_, _ = s.DeleteExpired(ctx, 3)
					_, _ = s.DeleteExpiredStreams(ctx, 3)
				case 7:
					s.ApplyBatch(ctx, store.BatchParams{Commands: []store.Command{
						store.ClaimParams{Consumer: "c", Key: key, Policy: short},
						store.CompleteParams{Consumer: "c", Key: key, FencingToken: tok, Policy: short},
						store.ClaimParams{Consumer: "c", Key: fmt.Sprint("k", rng.IntN(6)), Policy: short},
					}})
				case 8:
					_, _ = s.PurgeBatch(ctx, store.PurgeParams{Consumer: "c", States: []store.State{store.Released}, Limit: 2})
				case 9:
					st := fmt.Sprint("s", rng.IntN(3))
					seq := int64(rng.IntN(3) + 1)
					switch rng.IntN(4) {
					case 0:
						_, _ = s.ClaimStream(ctx, store.ClaimStreamParams{Consumer: "c", Stream: st, Sequence: seq, Policy: sp})
					case 3:
						_, _ = s.ClaimStream(ctx, store.ClaimStreamParams{Consumer: "c", Stream: st, Sequence: seq + 1,
							Park: true, Payload: []byte("p"), Policy: sp})
					case 1:
						_, _ = s.CompleteStream(ctx, store.CompleteStreamParams{Consumer: "c", Stream: st, Sequence: seq, FencingToken: tok, Policy: sp})
					case 2:
						_, _ = s.ReleaseStream(ctx, store.ReleaseStreamParams{Consumer: "c", Stream: st, Sequence: seq, FencingToken: tok, Policy: sp})
					}
				}
				if rng.IntN(20) == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	checkIndexes(t, s)
	checkIndexesCompacted(t, s)
}

// checkIndexesCompacted flushes and compacts the whole store, where a
// SingleDelete meets the Sets it deletes, then checks the indexes against
// the rows again and that Pebble reported no misuse of its API since Open.
func checkIndexesCompacted(t *testing.T, s *Store) {
	t.Helper()
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Compact(context.Background(), []byte{0}, []byte{0xff}, false); err != nil {
		t.Fatal(err)
	}
	checkIndexes(t, s)
	if n := s.events.misuses.Load(); n != 0 {
		t.Errorf("Pebble reported %d possible misuses of its API, such as a SingleDelete that met two Sets", n)
	}
}

func checkIndexes(t *testing.T, s *Store) {
	t.Helper()
	want := map[string]string{} // index key -> value, derived from the rows
	rows, parkedRows := 0, int64(0)
	err := s.iterate(context.Background(), []byte{tableRecord}, []byte{tableRecord + 1}, func(k, v []byte) (bool, error) {
		c, key, _ := splitTuple(k[1:])
		r, err := decodeRecord(v, c, key)
		if err != nil {
			return false, err
		}
		rows++
		want[string(expiryKey(tableRecordExpiry, r.ExpiresAt, c, key))] = ""
		if r.State == store.Pending {
			want[string(rowKey(tablePending, c, key))] = string(appendTime(nil, r.LeaseExpiresAt))
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.iterate(context.Background(), []byte{tableStream}, []byte{tableStream + 1}, func(k, v []byte) (bool, error) {
		c, name, _ := splitTuple(k[1:])
		st, err := decodeStream(v, c, name)
		if err != nil {
			return false, err
		}
		rows++
		want[string(expiryKey(tableStreamExpiry, st.ExpiresAt, c, name))] = ""
		if st.InFlight != 0 {
			want[string(rowKey(tableStreamPending, c, name))] = string(appendTime(nil, st.LeaseExpiresAt))
		}
		if st.Parked > 0 {
			want[string(rowKey(tableStreamParked, c, name))] = ""
		}
		var n int64
		if err := s.eachParked(context.Background(), c, name, 1, false, func(store.ParkedEvent) bool { n++; return true }); err != nil {
			return false, err
		}
		parkedRows += n
		if n != st.Parked {
			t.Errorf("stream %s counts %d parked events and holds %d", name, st.Parked, n)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, table := range []byte{tableRecordExpiry, tablePending, tableStreamExpiry, tableStreamPending, tableStreamParked} {
		err := s.iterate(context.Background(), []byte{table}, []byte{table + 1}, func(k, v []byte) (bool, error) {
			got[string(k)] = string(v)
			return true, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || !bytes.Equal([]byte(g), []byte(v)) {
			t.Errorf("index entry %q: got %q (present %v), want %q", k, g, ok, v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("index entry %q matches no row", k)
		}
	}
	var parkedKeys int64
	bytesOf := map[string]int64{}
	if err := s.iterate(context.Background(), []byte{tableParked}, []byte{tableParked + 1}, func(k, v []byte) (bool, error) {
		parkedKeys++
		c, _, _ := splitTuple(k[1:])
		ev, err := decodeParked(v, c, "", 0, false)
		bytesOf[c] += ev.PayloadBytes
		return err == nil, err
	}); err != nil {
		t.Fatal(err)
	}
	// The in-memory budgets agree with the parked events stored.
	for c, b := range s.budgets.byConsumer {
		if b.bytes != bytesOf[c] {
			t.Errorf("consumer %s: budget counts %d parked bytes, %d are stored", c, b.bytes, bytesOf[c])
		}
	}
	if parkedKeys != parkedRows {
		t.Errorf("%d parked events stored, %d belong to a stream", parkedKeys, parkedRows)
	}
	t.Logf("%d rows, %d index entries, %d parked events", rows, len(got), parkedKeys)
}
