package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dedupd/dedupd/internal/testing/pgtest"
	"github.com/dedupd/dedupd/migrations"
)

const createLeaseTable = `CREATE TABLE dedupd_migration_lock (
    id         INT PRIMARY KEY CHECK (id = 1),
    holder     TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
)`

// A migrator waits while another holds a live migration lease, and runs
// nothing meanwhile; it takes over a lease whose holder died (expired),
// and leaves no lease behind.
func TestMigrationLease(t *testing.T) {
	all, err := migrations.Load(migrations.Postgres, migrations.PostgresOnly)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("held by a live migrator", func(t *testing.T) {
		url := pgtest.URL(t)
		s := openStore(t, url)
		execAll(t, url, createLeaseTable,
			`INSERT INTO dedupd_migration_lock VALUES (1, 'another replica', now() + interval '1 hour')`)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := s.Migrate(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Migrate while another holds the lease: %v; want it to wait until its deadline", err)
		}
		if pending, err := s.PendingMigrations(context.Background()); err != nil || len(pending) != len(all) {
			t.Errorf("after waiting for the lease, %d of %d migrations pending, %v; want none applied", len(pending), len(all), err)
		}
		if n := queryInt(t, url, `SELECT count(*) FROM dedupd_migration_lock WHERE holder = 'another replica'`); n != 1 {
			t.Errorf("the other migrator's lease is gone (%d rows): a waiter must not take a live lease", n)
		}
	})
	t.Run("left by a migrator that died", func(t *testing.T) {
		url := pgtest.URL(t)
		s := openStore(t, url)
		execAll(t, url, createLeaseTable,
			`INSERT INTO dedupd_migration_lock VALUES (1, 'a killed replica', now() - interval '1 second')`)
		applied, err := s.Migrate(context.Background())
		if err != nil || len(applied) != len(all) {
			t.Fatalf("Migrate over an expired lease applied %d of %d, %v", len(applied), len(all), err)
		}
		if n := queryInt(t, url, `SELECT count(*) FROM dedupd_migration_lock`); n != 0 {
			t.Errorf("%d leases left after Migrate, want 0", n)
		}
	})
}
