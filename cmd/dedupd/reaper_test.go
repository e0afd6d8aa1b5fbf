package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dedupd/dedupd/internal/testing/dedupdproc"
	"github.com/dedupd/dedupd/internal/testing/pgtest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// expiredCount asks the server how many of the consumer's records are past
// their expiry but still stored.
func expiredCount(t *testing.T, admin dedupv1.AdminServiceClient) int64 {
	t.Helper()
	resp, err := admin.Stats(context.Background(), &dedupv1.StatsRequest{Consumer: consumer})
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	for _, c := range resp.GetConsumers() {
		if c.GetConsumer() == consumer {
			return c.GetExpired()
		}
	}
	return 0
}

// waitExpired polls Stats until the consumer has want expired records. It
// only waits; how long the store takes is not what is tested.
func waitExpired(t *testing.T, admin dedupv1.AdminServiceClient, want int64, logs *dedupdproc.LogBuffer) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for got := expiredCount(t, admin); got != want; got = expiredCount(t, admin) {
		if time.Now().After(deadline) {
			t.Fatalf("Stats reports %d expired records, want %d; logs:\n%s", got, want, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestReaperOffKeepsExpiredRecords: with --reaper=off expired records stay
// stored through many reap intervals; the same data served with
// --reaper=on is then reaped.
func TestReaperOffKeepsExpiredRecords(t *testing.T) {
	forEachBackend(t, func(t *testing.T, flags []string) {
		ctx := context.Background()
		flags = append(flags, "--completed-ttl", "50ms", "--reap-interval", "10ms")
		srv := startDedupd(t, append(flags, "--reaper=off")...)
		c := dedupv1.NewDedupServiceClient(srv.dial(t))
		admin := dedupv1.NewAdminServiceClient(srv.dial(t))
		for _, key := range []string{"a", "b", "c"} {
			got := claim(t, c, key, nil, 0)
			if _, err := c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: consumer, Key: key,
				FencingToken: got.GetFencingToken()}); err != nil {
				t.Fatal(err)
			}
		}
		waitExpired(t, admin, 3, srv.Logs)
		// Thirty reap intervals: a running reaper would have emptied them.
		time.Sleep(300 * time.Millisecond)
		if got := expiredCount(t, admin); got != 3 {
			t.Fatalf("with --reaper=off, %d expired records are left of 3; logs:\n%s", got, srv.Logs)
		}
		srv.stop(t)
		if !strings.Contains(srv.Logs.String(), "reaper off (--reaper=off)") {
			t.Errorf("startup does not log that the reaper is off; logs:\n%s", srv.Logs)
		}

		srv = startDedupd(t, append(flags, "--reaper=on")...)
		admin = dedupv1.NewAdminServiceClient(srv.dial(t))
		waitExpired(t, admin, 0, srv.Logs)
		srv.stop(t)
		if !strings.Contains(srv.Logs.String(), `"msg":"reaper on"`) {
			t.Errorf("startup does not log that the reaper is on; logs:\n%s", srv.Logs)
		}
	})
}

func TestReaperFlagRefusesOtherValues(t *testing.T) {
	out, err := runDedupd(t, "serve", "--data-dir", t.TempDir(), "--reaper", "maybe")
	if err == nil || !strings.Contains(out, `--reaper must be on or off, not "maybe"`) {
		t.Fatalf("serve --reaper maybe: %v\n%s", err, out)
	}
}

// migrate --cockroachdb-ttl refuses PostgreSQL with one clear line and
// applies nothing, not even the portable migrations.
func TestMigrateCockroachDBTTLRefusesPostgres(t *testing.T) {
	url := pgtest.URL(t)
	out, err := runDedupd(t, "migrate", "--database-url", url, "--cockroachdb-ttl")
	if err == nil || !strings.Contains(out, "dedupd: database is not CockroachDB: row-level TTL is a CockroachDB feature; this database reports \"PostgreSQL") {
		t.Fatalf("migrate --cockroachdb-ttl on PostgreSQL: %v\n%s", err, out)
	}
	if out, err := runDedupd(t, "serve", "--database-url", url, "--listen", "127.0.0.1:0"); err == nil ||
		!strings.Contains(out, "migrat") {
		t.Fatalf("serve after the refused migration started or failed otherwise: %v\n%s", err, out)
	}
	out, err = runDedupd(t, "migrate", "--cockroachdb-ttl", "--data-dir", t.TempDir())
	if err == nil || !strings.Contains(out, "--cockroachdb-ttl needs --database-url") {
		t.Fatalf("migrate --cockroachdb-ttl without a database URL: %v\n%s", err, out)
	}
}
