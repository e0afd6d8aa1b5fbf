package pgstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dedupd/dedupd/server/store/pgstore"
)

// TestLeaseStatsReadOnlyTheirIndex: the server samples PendingLeases and
// InFlightLeases for its metrics, so on a table of many finished rows and
// few claims in flight their plans must walk the partial index of the
// claims in flight, never the whole table.
func TestLeaseStatsReadOnlyTheirIndex(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	pool := pgstore.Pool(s)
	for _, q := range []string{
		`INSERT INTO dedup_records (consumer, key, state, digest, fencing_token, attempts, owner,
		     created_at, updated_at, lease_expires_at, expires_at)
		 SELECT 'c' || (i % 7), 'k' || i, CASE WHEN i % 1000 = 0 THEN 'PENDING' ELSE 'COMPLETED' END, '', 1, 1, '',
		     now(), now(), now() + interval '1 minute', now() + interval '1 day'
		 FROM generate_series(1, 20000) AS i`,
		`INSERT INTO dedup_streams (consumer, stream, mode, high_water, last_outcome, finished_token, rejected,
		     in_flight, digest, fencing_token, owner, lease_expires_at, created_at, updated_at, expires_at)
		 SELECT 'c' || (i % 7), 's' || i, 'DENSE', 1, 'COMPLETED', 1, 0, CASE WHEN i % 1000 = 0 THEN 2 ELSE 0 END,
		     '', 1, '', now() + interval '1 minute', now(), now(), now() + interval '1 day'
		 FROM generate_series(1, 20000) AS i`,
		`ANALYZE dedup_records`, `ANALYZE dedup_streams`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for index, sql := range pgstore.LeaseStatements {
		var plan strings.Builder
		rows, err := pool.Query(ctx, "EXPLAIN "+sql)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan.WriteString(line + "\n")
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(plan.String(), index) || strings.Contains(plan.String(), "Seq Scan") {
			t.Errorf("the plan does not walk %s alone:\n%s", index, plan.String())
		}
	}
}
