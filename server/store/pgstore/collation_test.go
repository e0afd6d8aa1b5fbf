package pgstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/internal/testing/pgtest"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
)

// icuDatabaseURL creates a database whose default collation is ICU en-US,
// under which PostgreSQL sorts "_x a a-b ab B é", and returns its URL; the
// database is dropped when the test ends.
func icuDatabaseURL(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	base := pgtest.URL(t) // skips or fails, as every PostgreSQL test, without a server
	name := fmt.Sprintf("dedupd_icu_%016x", rand.Uint64())
	if _, err := connect(t, base).Exec(ctx, "CREATE DATABASE "+name+
		" LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8' TEMPLATE template0"); err != nil {
		t.Fatalf("creating an ICU database: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), base)
		if err != nil {
			t.Logf("dropping %s: %v", name, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("dropping %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	q := u.Query()
	q.Del("search_path")
	u.RawQuery = q.Encode()
	return u.String()
}

// Keys order bytewise on PostgreSQL whatever the database's collation, as on
// every store: keyset pages, and prefix filters, on an ICU en-US database.
func TestKeysOrderBytewiseOnAnICUDatabase(t *testing.T) {
	ctx := context.Background()
	dbURL := icuDatabaseURL(t)
	s := migrated(t, openStore(t, dbURL))
	keys := []string{"é", "ab", "_x", "B", "a-b", "a", "pé", "pab", "p_x", "pB", "pa-b", "pa"}
	for _, k := range keys {
		if _, err := s.Claim(ctx, claimParams(k)); err != nil {
			t.Fatal(err)
		}
	}
	// Hand-sorted by bytes: 'B' 0x42 < '_' 0x5F < 'a' 0x61 < 'p' 0x70 <
	// 0xC3 (é); '-' 0x2D < 'b'.
	want := []string{"B", "_x", "a", "a-b", "ab", "pB", "p_x", "pa", "pa-b", "pab", "pé", "é"}
	if got := listKeys(t, s, store.ListParams{Consumer: "billing", Limit: 2}); !reflect.DeepEqual(got, want) {
		t.Errorf("ListRecords pages of 2: %q\nwant bytewise %q", got, want)
	}
	wantP := []string{"pB", "p_x", "pa", "pa-b", "pab", "pé"}
	if got := listKeys(t, s, store.ListParams{Consumer: "billing", KeyPrefix: "p", Limit: 4}); !reflect.DeepEqual(got, wantP) {
		t.Errorf("ListRecords with prefix p, pages of 4: %q\nwant %q", got, wantP)
	}

	// Under "C", LIKE 'prefix%' is a range on the primary key's key column,
	// not a filter applied to every row of the consumer.
	conn := connect(t, dbURL)
	if _, err := conn.Exec(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, `EXPLAIN SELECT key FROM dedup_records WHERE consumer = 'billing' AND key LIKE 'pa%' ORDER BY key`)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	if !strings.Contains(plan, "dedup_records_pkey") || !strings.Contains(plan, "(key >= 'pa'::text)") ||
		!strings.Contains(plan, "(key < 'pb'::text)") {
		t.Errorf("LIKE 'pa%%' is not a range on the primary key index:\n%s", plan)
	}

	// The store binds its prefix as parameters; once PostgreSQL plans a
	// cached statement generically it no longer sees the value, and LIKE $n
	// would become a filter. The store's own range condition stays a range
	// on the primary key under a generic plan.
	q := sqlstmt.NewQuery()
	q.Where("consumer = " + q.Bind("billing"))
	sqlstmt.KeyRange(q, "pa")
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "PREPARE prefix_range(text, text, text) AS SELECT key FROM dedup_records WHERE "+q.Clause()+" ORDER BY key"); err != nil {
		t.Fatal(err)
	}
	rows, err = conn.Query(ctx, `EXPLAIN EXECUTE prefix_range('billing', 'pa', 'pb')`)
	if err != nil {
		t.Fatal(err)
	}
	if lines, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	plan = strings.Join(lines, "\n")
	if !strings.Contains(plan, "dedup_records_pkey") || !strings.Contains(plan, "(key >= $2)") ||
		!strings.Contains(plan, "(key < $3)") {
		t.Errorf("the store's prefix condition %q is not a range on the primary key index under a generic plan:\n%s", q.Clause(), plan)
	}
}

// listKeys pages through ListRecords, each page after the last key of the
// one before, and returns the keys in the order seen.
func listKeys(t *testing.T, s store.Store, p store.ListParams) []string {
	t.Helper()
	var keys []string
	for {
		page, err := s.ListRecords(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page {
			keys = append(keys, r.Key)
		}
		if len(page) < p.Limit {
			return keys
		}
		p.AfterKey = page[len(page)-1].Key
	}
}

// Stream ids order bytewise too (2014_streams_collation_c), so ListStreams
// pages as on every other store.
func TestStreamsOrderBytewiseOnAnICUDatabase(t *testing.T) {
	ctx := context.Background()
	s := migrated(t, openStore(t, icuDatabaseURL(t)))
	for _, id := range []string{"é", "ab", "_x", "B", "a-b", "a"} {
		p := store.ClaimStreamParams{Consumer: "billing", Stream: id, Sequence: 1,
			Policy: store.StreamPolicy{DefaultLeaseTTL: time.Minute}}
		if _, err := s.ClaimStream(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	after := ""
	for {
		page, err := s.ListStreams(ctx, store.ListStreamsParams{Consumer: "billing", AfterStream: after, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, st := range page {
			got = append(got, st.Stream)
		}
		after = page[len(page)-1].Stream
	}
	if want := []string{"B", "_x", "a", "a-b", "ab", "é"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ListStreams pages of 2: %q\nwant bytewise %q", got, want)
	}
}
