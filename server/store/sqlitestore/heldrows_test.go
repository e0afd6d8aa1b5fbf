package sqlitestore

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/dedupd/dedupd/server/store"
)

// The rows kept for one-statement finishes are bounded in number and in
// size, whatever callers send: a row past maxHeldRowBytes is not kept (its
// finish reads), and a full map starts again empty.
func TestHeldRowsAreBounded(t *testing.T) {
	pending := func(key string, result []byte) *store.Record {
		return &store.Record{Consumer: "c", Key: key, State: store.Pending, Result: result}
	}
	tests := []struct {
		name string
		rec  *store.Record
		kept bool
	}{
		{"small pending row", pending("k", []byte("r")), true},
		{"pending row at the bound", pending("k", bytes.Repeat([]byte("r"), maxHeldRowBytes-2)), true},
		{"pending row past the bound", pending("k", bytes.Repeat([]byte("r"), maxHeldRowBytes-1)), false},
		{"long key", pending(strings.Repeat("k", maxHeldRowBytes), nil), false},
		{"finished row", &store.Record{Consumer: "c", Key: "k", State: store.Completed}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h heldRows
			h.note(pending(tt.rec.Key, nil)) // an earlier row of the key is replaced or forgotten
			h.note(tt.rec)
			_, kept := h[recordKey{tt.rec.Consumer, tt.rec.Key}]
			if kept != tt.kept {
				t.Fatalf("kept = %v, want %v (%d variable bytes, bound %d)", kept, tt.kept, heldRowBytes(tt.rec), maxHeldRowBytes)
			}
		})
	}
	var h heldRows
	for i := range maxHeldRows + 10 {
		h.note(pending(strconv.Itoa(i), nil))
		if len(h) > maxHeldRows {
			t.Fatalf("%d rows kept after %d notes, bound %d", len(h), i+1, maxHeldRows)
		}
	}
}
