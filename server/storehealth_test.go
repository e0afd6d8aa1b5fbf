package server

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/rpcerrors"
)

// refuseWrites makes the embedded database in dir refuse every insert and
// update of a record, as a full disk does: reads and pings still answer.
// The function it returns lets writes through again.
func refuseWrites(t *testing.T, dir string) (allow func()) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, "dedup.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, stmt := range []string{
		`CREATE TRIGGER full_insert BEFORE INSERT ON dedup_records BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`,
		`CREATE TRIGGER full_update BEFORE UPDATE ON dedup_records BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		for _, stmt := range []string{`DROP TRIGGER full_insert`, `DROP TRIGGER full_update`} {
			if _, err := db.Exec(stmt); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestHealthFollowsWrites: on a store that refuses every write while its
// ping answers (a full disk), DedupService and StreamService go
// NOT_SERVING at the third failed write in a row, not before, and not for
// writes the contract refuses (LEASE_LOST is an answer); once writes go
// through again they come back SERVING without a restart and without any
// caller writing (the watcher's own probe write).
func TestHealthFollowsWrites(t *testing.T) {
	cfg := testConfig()
	cfg.DataDir = t.TempDir()
	cfg.EmbeddedEngine = EngineSQLite // refuseWrites fills SQLite's disk
	cfg.HealthInterval = time.Second  // how often the probe runs, and a ping's window
	addr := runServer(t, cfg)
	conn := dialServer(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), answerDeadline)
	defer cancel()
	dedup, hc := dedupv1.NewDedupServiceClient(conn), healthpb.NewHealthClient(conn)
	services := []string{"", "dedup.v1.DedupService", "dedup.v1.StreamService"}
	statusOf := func(service string) healthpb.HealthCheckResponse_ServingStatus {
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		if err != nil {
			t.Fatalf("health check of %q: %v", service, err)
		}
		return resp.GetStatus()
	}
	wantAll := func(want healthpb.HealthCheckResponse_ServingStatus, when string) {
		t.Helper()
		for _, s := range services {
			if got := statusOf(s); got != want {
				t.Fatalf("%s: health of %q is %v, want %v", when, s, got, want)
			}
		}
	}
	claim := func(key string) error {
		_, err := dedup.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "c", Key: key})
		return err
	}
	wantAll(healthpb.HealthCheckResponse_SERVING, "at start")

	for i := range 5 { // refusals, not failures
		_, err := dedup.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "c", Key: fmt.Sprint("none", i), FencingToken: 1})
		if status.Code(err) != codes.Aborted || reasonOf(err) != rpcerrors.ReasonLeaseLost {
			t.Fatalf("Complete of an unclaimed key: %v, want ABORTED / LEASE_LOST", err)
		}
	}
	wantAll(healthpb.HealthCheckResponse_SERVING, "after writes the contract refused")

	allow := refuseWrites(t, cfg.DataDir)
	for i := range 3 { // the third failure in a row turns health
		if err := claim(fmt.Sprint("k", i)); status.Code(err) == codes.OK {
			t.Fatalf("claim on a database refusing writes: OK")
		}
		want := healthpb.HealthCheckResponse_SERVING
		if i == 2 {
			want = healthpb.HealthCheckResponse_NOT_SERVING
		}
		wantAll(want, fmt.Sprintf("after %d failed writes", i+1))
	}

	// The services are set one after another, so each is watched: a Check
	// of one just after another turned could still see the old status.
	var watches []grpc.ServerStreamingClient[healthpb.HealthCheckResponse]
	for _, s := range services {
		w, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{Service: s})
		if err != nil {
			t.Fatal(err)
		}
		if first, err := w.Recv(); err != nil || first.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Fatalf("Watch of %q began with %v, %v; want NOT_SERVING", s, first, err)
		}
		watches = append(watches, w)
	}
	allow()
	for i, w := range watches {
		if next, err := w.Recv(); err != nil || next.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("after writes went through again the Watch of %q said %v, %v; want SERVING", services[i], next, err)
		}
	}
	wantAll(healthpb.HealthCheckResponse_SERVING, "after writes went through again")
	if err := claim("after"); err != nil {
		t.Fatalf("claim after recovery: %v", err)
	}
}
