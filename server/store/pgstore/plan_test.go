package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pgstore"
)

// The statements that join dedup_records to unnest(...) arrays (the batch
// read, the batch write, group commit's finishing UPDATE) must not be
// server-side prepared: a prepared statement gets a generic plan after five
// runs, and one planned while the table was small scans the whole table on
// every later run (measured: 2 ms of database CPU per finished call at
// 60,000 rows, with autovacuum off as on this machine). Run as unnamed
// statements, they are planned with their values each time.
func TestJoinStatementsAreNotPrepared(t *testing.T) {
	var log statementLog
	ctx := context.Background()
	s := newTracedStore(t, &log)
	for round := range 7 { // past the five runs after which a generic plan is cached
		claims := make([]store.Command, 3)
		for i := range claims {
			claims[i] = claimParams(fmt.Sprintf("r%d-k%d", round, i))
		}
		completes := make([]store.Command, 0, len(claims))
		for _, r := range s.ApplyBatch(ctx, store.BatchParams{Commands: claims}) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			completes = append(completes, store.CompleteParams{Consumer: r.Record.Consumer, Key: r.Record.Key,
				FencingToken: r.Record.FencingToken, Result: []byte("ok"), Policy: policy})
		}
		for _, r := range s.ApplyBatch(ctx, store.BatchParams{Commands: completes}) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		// A lone Complete goes through group commit's finishing UPDATE.
		lone, err := s.Claim(ctx, claimParams(fmt.Sprintf("r%d-lone", round)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Complete(ctx, store.CompleteParams{Consumer: lone.Record.Consumer, Key: lone.Record.Key,
			FencingToken: lone.Record.FencingToken, Result: []byte("ok"), Policy: policy}); err != nil {
			t.Fatal(err)
		}
	}
	isJoin := func(sql string) bool {
		return strings.Contains(sql, "unnest(") && (strings.Contains(sql, "JOIN dedup_records") || strings.Contains(sql, "JOIN LATERAL")) ||
			strings.HasPrefix(strings.TrimSpace(sql), "UPDATE dedup_records AS r") ||
			strings.HasPrefix(strings.TrimSpace(sql), "WITH updated AS")
	}
	sent := 0
	for _, sql := range log.take() {
		if isJoin(sql) {
			sent++
		}
	}
	if sent == 0 {
		t.Fatal("no joining statement was sent; the test exercises nothing")
	}

	conns := pgstore.Pool(s).AcquireAllIdle(ctx)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for _, c := range conns {
		rows, err := c.Query(ctx, "SELECT statement FROM pg_prepared_statements")
		if err != nil {
			t.Fatal(err)
		}
		prepared, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, sql := range prepared {
			if isJoin(sql) {
				t.Errorf("a session holds a prepared joining statement, which PostgreSQL may plan generically:\n%s", sql)
			}
		}
	}
}

// The batch read (readKeysSQL) is planned each time, with its keys in
// hand; it must still probe the primary key once per key and never scan
// the table, including at the sizes where PostgreSQL, with no statistics
// yet, costs a hash join over a whole-table scan below the probes (some
// 10^4 rows: the plain join of unnest and dedup_records planned exactly
// that at 24,000).
func TestReadKeysProbesThePrimaryKey(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	pool := pgstore.Pool(s)
	growPending(t, pool, 24000)
	consumers, keys := make([]string, 100), make([]string, 100)
	for i := range keys {
		consumers[i], keys[i] = "billing", fmt.Sprintf("grown-%d", i*200+1)
	}
	var plan []struct{ Plan planNode }
	if err := pool.QueryRow(ctx, `EXPLAIN (FORMAT JSON) `+pgstore.ReadKeysSQL, pgx.QueryExecModeExec, consumers, keys).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	checkOnePrimaryKeyProbe(t, "the batch read", plan[0].Plan)
}

// growPending inserts n PENDING records of consumer billing, keys
// grown-1 to grown-n, as a table the planner may cost as big.
func growPending(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `INSERT INTO dedup_records (consumer, key, state, digest, fencing_token, attempts,
    owner, created_at, updated_at, lease_expires_at, expires_at)
SELECT 'billing', 'grown-' || i, 'PENDING', '\x00', 1, 1, 'o', now(), now(), now() + interval '1 hour', now() + interval '2 hours'
FROM generate_series(1, $1::INT8) AS i`, n); err != nil {
		t.Fatal(err)
	}
}

// checkOnePrimaryKeyProbe fails unless the plan below root reads
// dedup_records once, by an index scan of its primary key (the write of
// an UPDATE aside).
func checkOnePrimaryKeyProbe(t *testing.T, what string, root planNode) {
	t.Helper()
	var reads []string
	var walk func(n planNode)
	walk = func(n planNode) {
		if n.Relation == "dedup_records" && n.NodeType != "ModifyTable" {
			reads = append(reads, n.NodeType+" "+n.Index)
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(root)
	if len(reads) != 1 || (reads[0] != "Index Scan dedup_records_pkey" && reads[0] != "Index Only Scan dedup_records_pkey") {
		out, _ := json.Marshal(root)
		t.Errorf("%s reads dedup_records by %q, want one probe of its primary key: %s", what, reads, out)
	}
}
