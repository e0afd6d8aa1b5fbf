package sqlstmt

import (
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dedupd/dedupd/server/store"
)

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct {
		prefix, end string
		ok          bool
	}{
		{"", "", false},
		{"a", "b", true},
		{"ab", "ac", true},
		{"é", "ê", true},             // U+00E9 -> U+00EA (C3 A9 -> C3 AA)
		{"a\u007f", "a\u0080", true}, // 7F -> C2 80: a byte step would give a lone 0x80
		{"a\u00ff", "a\u0100", true}, // C3 BF -> C4 80: a byte step would give C3 C0
		{"a\ud7ff", "a\ue000", true}, // past the surrogates
		{"a\U0010FFFF", "b", true},
		{"\U0010FFFF\U0010FFFF", "", false},
	} {
		end, ok := PrefixEnd(tc.prefix)
		if end != tc.end || ok != tc.ok {
			t.Errorf("PrefixEnd(%q) = %q, %v; want %q, %v", tc.prefix, end, ok, tc.end, tc.ok)
		}
		if !utf8.ValidString(end) {
			t.Errorf("PrefixEnd(%q) = %q is not UTF-8", tc.prefix, end)
		}
		// Every string with the prefix sorts before the end.
		if ok && !(tc.prefix+"\U0010FFFF\U0010FFFF" < end) {
			t.Errorf("PrefixEnd(%q) = %q is not above the prefix's strings", tc.prefix, end)
		}
	}
}

// testDialect binds its clock, so that the clause's numbering shows it.
var testDialect = Dialect{Now: "$1", Time: func(t time.Time) any { return t.Unix() },
	clock: func() time.Time { return time.Unix(7, 0) }}

func TestListWhere(t *testing.T) {
	at := time.Unix(100, 0)
	q := ListWhere(testDialect, store.ListParams{
		Consumer: "c", States: []store.State{store.Pending, store.Released}, KeyPrefix: "p",
		CreatedAfter: at, UpdatedBefore: at, LeaseExpired: true, AfterKey: "k", Limit: 5,
	})
	want := []string{"consumer = $2", "expires_at > $1", "state IN ($3, $4)", "key >= $5", "key < $6",
		"created_at >= $7", "updated_at < $8", "state = 'PENDING'", "lease_expires_at <= $1", "key > $9"}
	if got := q.Clause(); got != strings.Join(want, " AND ") {
		t.Errorf("clause\n got %s\nwant %s", got, strings.Join(want, " AND "))
	}
	wantArgs := []any{int64(7), "c", "PENDING", "RELEASED", "p", "q", int64(100), int64(100), "k"}
	if !reflect.DeepEqual(q.Args(), wantArgs) {
		t.Errorf("args %v, want %v", q.Args(), wantArgs)
	}
}

func TestPurgeWhere(t *testing.T) {
	for _, tc := range []struct {
		p      store.PurgeParams
		clause string
		args   []any
	}{
		// The clock is bound only when the clause mentions it.
		{store.PurgeParams{ExpiredOnly: true}, "expires_at <= $1", []any{int64(7)}},
		{store.PurgeParams{Consumer: "c", UpdatedBefore: time.Unix(100, 0)}, "consumer = $1 AND updated_at < $2", []any{"c", int64(100)}},
		{store.PurgeParams{}, "TRUE", nil},
	} {
		q := PurgeWhere(testDialect, tc.p)
		if got := q.Clause(); got != tc.clause || !reflect.DeepEqual(q.Args(), tc.args) {
			t.Errorf("PurgeWhere(%+v) = %q %v, want %q %v", tc.p, got, q.Args(), tc.clause, tc.args)
		}
	}
}
