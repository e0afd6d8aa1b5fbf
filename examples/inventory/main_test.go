package main_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/client/dedupdtest"
	"github.com/dedupd/dedupd/examples/inventory/stock"
	"github.com/dedupd/dedupd/internal/testing/pgtest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// consumer is the dedupd consumer the example uses (main.consumerName).
const consumer = "inventory-example"

var inventory string // the built example

func TestMain(m *testing.M) {
	var err error
	if inventory, err = dedupdtest.Build("github.com/dedupd/dedupd/examples/inventory"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dedupdtest.Main(m)
}

// runInventory runs the example with DEDUPD_ADDR and the database URL in
// its environment, feeding it stdin, and returns its output and exit code.
func runInventory(t *testing.T, addr, dbURL, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(inventory, args...)
	cmd.Env = append(os.Environ(), "DEDUPD_ADDR="+addr, "INVENTORY_DATABASE_URL="+dbURL)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

func TestEventsExitCodeAndOutput(t *testing.T) {
	addr := dedupdtest.Start(t, dedupdtest.Embedded)
	dbURL := pgtest.URL(t)
	for _, tc := range []struct {
		name, stdin string
		args        []string
		wantOut     []string
		wantErr     string
		wantCode    int
	}{
		{"applies once", `{"event_id":"E1","item":"widget","qty":3}` + "\n" + `{"event_id":"E1","item":"widget","qty":3}`,
			[]string{"-seed", "10"},
			[]string{"E1: applied, 7 widget left", "E1: already applied (replayed), 7 widget left"}, "", 0},
		{"digest mismatch fails", `{"event_id":"E1","item":"widget","qty":4}` + "\n" + `{"event_id":"E2","item":"widget","qty":1}`, nil,
			[]string{"E1: NOT APPLIED: DIGEST_MISMATCH:", "E2: applied, 6 widget left"}, "inventory: 1 events not applied", 1},
		{"out of stock fails", `{"event_id":"E3","item":"widget","qty":7}`, nil,
			[]string{"E3: NOT APPLIED: refused (OUT_OF_STOCK)"}, "inventory: 1 events not applied", 1},
		{"bad input fails", `not json`, nil, nil, "inventory: line 1 is not an event", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runInventory(t, addr, dbURL, tc.stdin, tc.args...)
			if code != tc.wantCode || !strings.Contains(stderr, tc.wantErr) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q (stdout %q)", code, stderr, tc.wantCode, tc.wantErr, stdout)
			}
			lines := strings.Split(strings.TrimSpace(stdout), "\n")
			if tc.wantOut == nil && stdout != "" || tc.wantOut != nil && len(lines) != len(tc.wantOut) {
				t.Fatalf("stdout %q; want lines starting %q", stdout, tc.wantOut)
			}
			for i, want := range tc.wantOut {
				if !strings.HasPrefix(lines[i], want) {
					t.Errorf("line %d is %q; want it to start %q", i+1, lines[i], want)
				}
			}
		})
	}
}

func TestUnreachableDedupdFails(t *testing.T) {
	stdout, stderr, code := runInventory(t, "127.0.0.1:1", pgtest.URL(t), `{"event_id":"E1","item":"widget","qty":1}`, "-seed", "5")
	if code != 1 || !strings.HasPrefix(stdout, "E1: NOT APPLIED: ") || stderr != "inventory: 1 events not applied\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 naming the failure", code, stdout, stderr)
	}
}

// TestReconcileOutput abandons two claims, one whose stock was taken (its
// receipt says so) and one whose was not, and checks the one
// line per settled claim and what dedupd stored.
func TestReconcileOutput(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addr := dedupdtest.Start(t, dedupdtest.Embedded)
	dbURL := pgtest.URL(t)
	if _, _, code := runInventory(t, addr, dbURL, "", "-seed", "10"); code != 0 {
		t.Fatalf("creating the tables: exit %d", code)
	}
	db, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	if _, err := db.Exec(ctx, `INSERT INTO dedupd_receipts VALUES ('`+consumer+`', 'E8', 1, '5', now(), now() + interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	dedup, err := client.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer dedup.Close()
	for _, key := range []string{"E7", "E8"} {
		digest, _ := client.DigestValue(stock.Event{ID: key, Item: "widget", Qty: 1})
		if _, err := dedup.Claim(ctx, consumer, key, digest, client.ClaimOptions{LeaseTTL: 50 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	waitExpired(ctx, t, dedup, 2)

	stdout, stderr, code := runInventory(t, addr, dbURL, "", "-reconcile")
	want := "E7: released (NOT_APPLIED: no stock was taken; redeliver)\nE8: completed (5)\nreconciled 2 abandoned claims\n"
	if code != 0 || stdout != want {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 0 and %q", code, stdout, stderr, want)
	}
	for key, state := range map[string]dedupv1.State{"E7": dedupv1.State_STATE_RELEASED, "E8": dedupv1.State_STATE_COMPLETED} {
		rec, err := dedup.Lookup(ctx, consumer, key)
		if err != nil || rec.GetState() != state {
			t.Errorf("%s is %v (%v); want %v", key, rec.GetState(), err, state)
		}
	}
}

// waitExpired polls until n pending claims of the consumer have an
// expired lease, as the reconciler will list them.
func waitExpired(ctx context.Context, t *testing.T, dedup *client.Client, n int) {
	t.Helper()
	for ctx.Err() == nil {
		listed := 0
		for _, err := range dedup.Records(ctx, &dedupv1.ListRecordsRequest{Consumer: consumer, LeaseExpired: true,
			States: []dedupv1.State{dedupv1.State_STATE_PENDING}}) {
			if err != nil {
				t.Fatal(err)
			}
			listed++
		}
		if listed == n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the claims' leases did not run out")
}

// TestCreatesItsDatabase points the example at a database that does not
// exist yet: it creates it rather than writing into another one.
func TestCreatesItsDatabase(t *testing.T) {
	u, err := url.Parse(pgtest.URL(t))
	if err != nil || u.Scheme == "" {
		t.Fatalf("pgtest.URL is not a URL: %v", err)
	}
	name := fmt.Sprintf("dedupd_inventory_test_%016x", rand.Uint64())
	u.Path = "/" + name
	q := u.Query()
	q.Del("search_path")
	u.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		admin := *u
		admin.Path = "/postgres"
		conn, err := pgx.Connect(ctx, admin.String())
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Error(err)
		}
	})
	addr := dedupdtest.Start(t, dedupdtest.Embedded)
	stdout, stderr, code := runInventory(t, addr, u.String(), `{"event_id":"E1","item":"widget","qty":2}`, "-seed", "4")
	if code != 0 || stdout != "E1: applied, 2 widget left\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatalf("the example did not create %s: %v", name, err)
	}
	defer conn.Close(ctx)
	var qty int
	if err := conn.QueryRow(ctx, `SELECT qty FROM stock WHERE item = 'widget'`).Scan(&qty); err != nil || qty != 2 {
		t.Fatalf("stock in %s: %d, %v; want 2", name, qty, err)
	}
}
