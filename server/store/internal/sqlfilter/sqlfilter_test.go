package sqlfilter

import (
	"reflect"
	"strings"
	"testing"
	"time"

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
		{"a\xff", "b", true},
		{"\xff\xff", "", false},
		{"é", "é"[:1] + "\xaa", true}, // é is C3 A9
	} {
		end, ok := PrefixEnd(tc.prefix)
		if end != tc.end || ok != tc.ok {
			t.Errorf("PrefixEnd(%q) = %q, %v; want %q, %v", tc.prefix, end, ok, tc.end, tc.ok)
		}
		// Every string with the prefix sorts before the end.
		if ok && (tc.prefix+"\xff\xff" >= end) {
			t.Errorf("PrefixEnd(%q) = %q is not above the prefix's strings", tc.prefix, end)
		}
	}
}

func TestEscapeLike(t *testing.T) {
	if got, want := EscapeLike(`50%_a\b`), `50\%\_a\\b`; got != want {
		t.Fatalf("EscapeLike = %q, want %q", got, want)
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
