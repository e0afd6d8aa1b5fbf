package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pgstore"
)

// The insert of fresh claims (both its forms) is the one multi-row
// statement on dedup_records that runs prepared, from a generic plan
// cached while the table may have been empty. That is safe only because its plan reads no table at all: the
// arrays come from unnest, and the one look-up of dedup_records is the
// conflict check on the primary key, which is no planner choice. This
// test takes each form as the store prepared it, grows the table
// (with fresh statistics, so that a plan which scanned it would be costed
// as big), and fails if the generic plan has any scan of a table.
func TestFreshInsertPlanReadsNoTable(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	for round := range 7 { // past the five runs after which a generic plan is cached
		// A poll whose claims share all but keys, digests and owners, which
		// takes the shared form, and one of two consumers, which takes the
		// other.
		claims := make([]store.Command, 3)
		mixed := make([]store.Command, 3)
		for i := range claims {
			claims[i] = claimParams(fmt.Sprintf("r%d-k%d", round, i))
			p := claimParams(fmt.Sprintf("r%d-mixed-k%d", round, i))
			p.Consumer = fmt.Sprintf("consumer-%d", i%2)
			mixed[i] = p
		}
		for _, r := range s.ApplyBatch(ctx, store.BatchParams{Commands: mixed}) {
			if r.Err != nil || r.Outcome != store.Acquired {
				t.Fatalf("fresh claim: %v, %v", r.Outcome, r.Err)
			}
		}
		for _, r := range s.ApplyBatch(ctx, store.BatchParams{Commands: claims}) {
			if r.Err != nil || r.Outcome != store.Acquired {
				t.Fatalf("fresh claim: %v, %v", r.Outcome, r.Err)
			}
		}
	}
	pool := pgstore.Pool(s)
	if _, err := pool.Exec(ctx, `INSERT INTO dedup_records (consumer, key, state, digest, fencing_token, attempts,
    owner, created_at, updated_at, lease_expires_at, expires_at)
SELECT 'grown', md5(i::TEXT), 'PENDING', '\x00', 1, 1, 'o', now(), now(), now() + interval '1 hour', now() + interval '2 hours'
FROM generate_series(1, 50000) AS i`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE dedup_records`); err != nil {
		t.Fatal(err)
	}

	conns := pool.AcquireAllIdle(ctx)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	checked := map[string]int{}
	for _, c := range conns {
		for form, sql := range map[string]string{"arrays": pgstore.InsertFreshSQL, "shared": pgstore.InsertSharedFreshSQL} {
			var name string
			err := c.QueryRow(ctx, `SELECT name FROM pg_prepared_statements WHERE statement = $1`, sql).Scan(&name)
			if err != nil {
				continue // this session did not run it
			}
			if _, err := c.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
				t.Fatal(err)
			}
			var plan []struct{ Plan planNode }
			if err := c.QueryRow(ctx, `EXPLAIN (FORMAT JSON) EXECUTE `+name+`(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`).Scan(&plan); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Exec(ctx, `RESET plan_cache_mode`); err != nil {
				t.Fatal(err)
			}
			checkNoTableRead(t, plan[0].Plan)
			checked[form]++
		}
	}
	for _, form := range []string{"arrays", "shared"} {
		if checked[form] == 0 {
			t.Errorf("no session holds the %s form of the fresh insert prepared; the store no longer prepares it, and this test checks nothing of it", form)
		}
	}
}

// planNode is a node of EXPLAIN (FORMAT JSON).
type planNode struct {
	NodeType  string     `json:"Node Type"`
	Operation string     `json:"Operation"`
	Relation  string     `json:"Relation Name"`
	Index     string     `json:"Index Name"`
	Arbiters  []string   `json:"Conflict Arbiter Indexes"`
	Plans     []planNode `json:"Plans"`
}

// checkNoTableRead fails unless root is the insert into dedup_records,
// arbitrated by the primary key, over nodes that name no table.
func checkNoTableRead(t *testing.T, root planNode) {
	t.Helper()
	if root.NodeType != "ModifyTable" || root.Operation != "Insert" || root.Relation != "dedup_records" ||
		!slices.Equal(root.Arbiters, []string{"dedup_records_pkey"}) {
		plan, _ := json.Marshal(root)
		t.Fatalf("the plan is not an insert into dedup_records arbitrated by its primary key: %s", plan)
	}
	var walk func(n planNode)
	walk = func(n planNode) {
		if n.Relation != "" {
			plan, _ := json.Marshal(root)
			t.Errorf("the generic plan reads %s (%s), which may cost more as the table grows: %s", n.Relation, n.NodeType, plan)
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	for _, c := range root.Plans {
		walk(c)
	}
}

// TestSharedFreshInsertKeepsEachOwner: fresh claims of one consumer by
// different workers go into the shared form of the insert, and each row
// keeps its own claim's owner.
func TestSharedFreshInsertKeepsEachOwner(t *testing.T) {
	ctx := context.Background()
	var log statementLog
	s := newTracedStore(t, &log)
	claims := make([]store.Command, 4)
	for i := range claims {
		p := claimParams(fmt.Sprintf("owned-%d", i))
		p.Owner = fmt.Sprintf("worker-%d", i)
		claims[i] = p
	}
	log.take()
	for i, r := range s.ApplyBatch(ctx, store.BatchParams{Commands: claims}) {
		if r.Err != nil || r.Outcome != store.Acquired || r.Record.Owner != fmt.Sprintf("worker-%d", i) {
			t.Errorf("claim %d: %v, owner %q, %v", i, r.Outcome, r.Record.Owner, r.Err)
		}
	}
	if sqls := log.take(); !slices.Contains(sqls, pgstore.InsertSharedFreshSQL) {
		t.Errorf("the poll's statements %q do not include the shared insert", sqls)
	}
	for i := range claims {
		rec, err := s.Lookup(ctx, "billing", fmt.Sprintf("owned-%d", i))
		if err != nil || rec.Owner != fmt.Sprintf("worker-%d", i) {
			t.Errorf("stored owned-%d: owner %q, %v; want worker-%d", i, rec.Owner, err, i)
		}
	}
}
