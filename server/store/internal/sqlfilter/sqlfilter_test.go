package sqlfilter

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

var testDialect = Dialect{
	Now:  "now()",
	Time: func(t time.Time) any { return t.Unix() },
	KeyPrefix: func(q *Query, prefix string) {
		q.Where("key LIKE " + q.Bind(prefix+"%"))
	},
}

func TestListRecordsClause(t *testing.T) {
	at := time.Unix(100, 0)
	q := NewQuery("first")
	ListRecords(testDialect, q, store.ListParams{
		Consumer: "c", States: []store.State{store.Pending, store.Released}, KeyPrefix: "p",
		CreatedAfter: at, UpdatedBefore: at, LeaseExpired: true, AfterKey: "k", Limit: 5,
	})
	want := []string{"consumer = $2", "expires_at > now()", "state IN ($3, $4)", "key LIKE $5",
		"created_at >= $6", "updated_at < $7", "state = 'PENDING'", "lease_expires_at <= now()", "key > $8"}
	if got := q.Clause(); got != strings.Join(want, " AND ") {
		t.Errorf("clause\n got %s\nwant %s", got, strings.Join(want, " AND "))
	}
	wantArgs := []any{"first", "c", "PENDING", "RELEASED", "p%", int64(100), int64(100), "k"}
	if !reflect.DeepEqual(q.Args(), wantArgs) {
		t.Errorf("args %v, want %v", q.Args(), wantArgs)
	}
}

func TestPurgeClause(t *testing.T) {
	q := NewQuery()
	Purge(testDialect, q, store.PurgeParams{ExpiredOnly: true})
	if got := q.Clause(); got != "expires_at <= now()" {
		t.Errorf("expired-only clause %q", got)
	}
	q = NewQuery()
	Purge(testDialect, q, store.PurgeParams{})
	if got := q.Clause(); got != "TRUE" {
		t.Errorf("empty clause %q, want TRUE", got)
	}
}
