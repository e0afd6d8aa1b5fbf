package pebblestore

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// A record's value is written on every claim and finish: it must encode in
// one allocation, whatever its fields hold, and read back as it was.
func TestRecordValueIsOneAllocation(t *testing.T) {
	at := time.Date(2026, 12, 7, 12, 0, 0, 123000, time.UTC)
	for _, tc := range []struct {
		name string
		rec  store.Record
	}{
		{"fresh claim", store.Record{Consumer: "c", Key: "k", State: store.Pending, FencingToken: 1, Attempts: 1,
			CreatedAt: at, UpdatedAt: at, LeaseExpiresAt: at.Add(time.Minute), ExpiresAt: at.Add(time.Hour)}},
		{"largest numbers", store.Record{Consumer: "c", Key: "k", State: store.Pending, FencingToken: -1 << 63, Attempts: 1<<63 - 1,
			Digest: bytes.Repeat([]byte{0xff}, 64), Owner: strings.Repeat("o", 200),
			CreatedAt: at, UpdatedAt: at, LeaseExpiresAt: at, ExpiresAt: at}},
		{"completed with a result", store.Record{Consumer: "c", Key: "k", State: store.Completed, FencingToken: 7, Attempts: 2,
			Digest: []byte("digest"), Result: bytes.Repeat([]byte("r"), 4096), CreatedAt: at, UpdatedAt: at, ExpiresAt: at.Add(24 * time.Hour)}},
		{"rejected", store.Record{Consumer: "c", Key: "k", State: store.Rejected, FencingToken: 3, Attempts: 1,
			Rejection: &store.Rejection{Reason: "CARD_DECLINED", Message: strings.Repeat("m", 300), Detail: []byte("detail"), Retryable: true},
			CreatedAt: at, UpdatedAt: at, ExpiresAt: at.Add(time.Hour)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(100, func() { _ = encodeRecord(&tc.rec) }); n != 1 {
				t.Errorf("encodeRecord made %v allocations; want 1", n)
			}
			v := encodeRecord(&tc.rec)
			if len(v) > recordValueCap(&tc.rec) {
				t.Errorf("value is %d bytes, over its bound %d", len(v), recordValueCap(&tc.rec))
			}
			got, err := decodeRecord(v, tc.rec.Consumer, tc.rec.Key)
			if err != nil || !reflect.DeepEqual(*got, tc.rec) {
				t.Errorf("decoded %+v, %v; want %+v", got, err, tc.rec)
			}
		})
	}
}

// An expiry index key is built on every write that moves a record's
// expiry: one allocation, and the same bytes as the key built piece by
// piece (the order the index's scans rely on).
func TestExpiryKeyIsOneAllocation(t *testing.T) {
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	if n := testing.AllocsPerRun(100, func() { _ = expiryKey(tableRecordExpiry, at, "orders", "key-1") }); n != 1 {
		t.Errorf("expiryKey made %v allocations; want 1", n)
	}
	for _, name := range []string{"key-1", "", "a\x00b"} {
		want := appendTuple(appendTime([]byte{tableRecordExpiry}, at), "orders", name)
		if got := expiryKey(tableRecordExpiry, at, "orders", name); !bytes.Equal(got, want) {
			t.Errorf("expiryKey(%q) = %x; want %x", name, got, want)
		}
	}
}
