package pebblestore

import (
	"bytes"
	"cmp"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// The tuple encoding must sort exactly as (consumer, name) compared
// bytewise, and read back to what was written; the oracle is
// strings.Compare on the parts.
func TestTupleOrderIsBytewise(t *testing.T) {
	alphabet := []string{"", "\x00", "\x01", "\xff", "a", "b", "é", "\x00\xff", "\x00\x01"}
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		var b strings.Builder
		for range rng.IntN(4) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for range 20000 {
		c1, n1, c2, n2 := word(), word(), word(), word()
		want := cmp.Or(strings.Compare(c1, c2), strings.Compare(n1, n2))
		k1, k2 := rowKey(tableRecord, c1, n1), rowKey(tableRecord, c2, n2)
		if got := bytes.Compare(k1, k2); got != want {
			t.Fatalf("(%q, %q) vs (%q, %q): keys compare %d, want %d", c1, n1, c2, n2, got, want)
		}
		if c, n, ok := splitTuple(k1[1:]); !ok || c != c1 || n != n1 {
			t.Fatalf("splitTuple(rowKey(%q, %q)) = %q, %q, %v", c1, n1, c, n, ok)
		}
		// A consumer's entries are one range: its prefix begins every one.
		if !bytes.HasPrefix(k1, consumerPrefix(tableRecord, c1)) {
			t.Fatalf("rowKey(%q, %q) is outside its consumer's range", c1, n1)
		}
		if c1 != c2 && bytes.HasPrefix(k2, consumerPrefix(tableRecord, c1)) {
			t.Fatalf("rowKey(%q, %q) falls in consumer %q's range", c2, n2, c1)
		}
	}
}

func TestTimeOrderAndExpiredBound(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	times := []time.Time{base.Add(-time.Hour), base.Add(-time.Microsecond), base, base.Add(time.Microsecond), base.Add(time.Hour),
		time.UnixMicro(-5).UTC(), time.UnixMicro(0).UTC()}
	for _, a := range times {
		if got := readTime(appendTime(nil, a)[0:8]); !got.Equal(a) {
			t.Fatalf("time %v reads back as %v", a, got)
		}
		for _, b := range times {
			if got := bytes.Compare(appendTime(nil, a), appendTime(nil, b)); got != a.Compare(b) {
				t.Fatalf("%v vs %v: bytes compare %d, want %d", a, b, got, a.Compare(b))
			}
		}
		// expires_at <= now exactly when the entry sorts below the bound.
		k := expiryKey(tableRecordExpiry, a, "c", "k")
		if below := bytes.Compare(k, expiredBound(tableRecordExpiry, base)) < 0; below != !a.After(base) {
			t.Fatalf("entry at %v below the bound of %v: %v", a, base, below)
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct{ in, want []byte }{
		{[]byte("ab"), []byte("ac")},
		{[]byte{'a', 0xff}, []byte("b")},
		{[]byte{0xff, 0xff}, nil},
		{nil, nil},
	} {
		if got := prefixEnd(tc.in); !bytes.Equal(got, tc.want) {
			t.Errorf("prefixEnd(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
