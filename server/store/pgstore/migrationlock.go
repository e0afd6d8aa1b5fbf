package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The migration lease: one row in a table of its own that a migrator claims
// before it runs any DDL, so that replicas starting together migrate one at
// a time. CockroachDB has no advisory locks (they are accepted and do
// nothing), and two concurrent ALTER ... COLLATE statements fail PostgreSQL
// at SERIALIZABLE with an internal error (XX000 "could not find tuple for
// constraint"), so idempotent DDL alone is not enough.
//
// Each statement below runs on its own in an implicit transaction: the
// table's DDL is never mixed with the lease's DML, and no transaction
// stays open while the migrations run their own DDL. The lease expires, so
// a migrator killed while holding it stops blocking the others once its
// lease has run out; a holder renews it while it works.
const (
	createMigrationLock = `CREATE TABLE IF NOT EXISTS dedupd_migration_lock (
    id         INT PRIMARY KEY CHECK (id = 1),
    holder     TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
)`
	// The conflict arm takes over only an expired lease; a live one
	// returns no row.
	claimMigrationLock = `INSERT INTO dedupd_migration_lock (id, holder, expires_at)
VALUES (1, $1, now() + $2 * interval '1 millisecond')
ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
WHERE dedupd_migration_lock.expires_at < now()
RETURNING holder`
	renewMigrationLock = `UPDATE dedupd_migration_lock SET expires_at = now() + $2 * interval '1 millisecond'
WHERE id = 1 AND holder = $1 RETURNING holder`
	releaseMigrationLock = `DELETE FROM dedupd_migration_lock WHERE id = 1 AND holder = $1`
)

// Migration lease timing: a lease outlives any pause of its holder between
// renewals by a wide margin, and a waiter polls often enough that replicas
// starting together are not held up long after the holder finishes.
const (
	migrationLeaseTTL   = 30 * time.Second
	migrationLeaseRenew = migrationLeaseTTL / 3
	migrationLockPoll   = 100 * time.Millisecond
)

// errMigrationLeaseLost is a renewal that found the lease gone or taken
// over: this migrator paused longer than the lease lasts.
var errMigrationLeaseLost = errors.New("pgstore: the migration lease expired and was taken over while migrating")

// withMigrationLock runs fn while holding the migration lease, waiting for
// the lease while another migrator holds it.
func (s *Store) withMigrationLock(ctx context.Context, fn func(context.Context) error) error {
	holder, err := s.acquireMigrationLock(ctx)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		s.renewMigrationLock(runCtx, holder, cancel)
	}()
	err = fn(runCtx)
	cancel(nil)
	<-renewed
	if cause := context.Cause(runCtx); errors.Is(cause, errMigrationLeaseLost) && err == nil {
		err = cause
	}
	// Released on a fresh context: the caller's may be done, and a lease
	// left behind would hold the next migrator up for its whole TTL.
	releaseCtx, done := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer done()
	if _, relErr := s.pool.Exec(releaseCtx, releaseMigrationLock, holder); relErr != nil && err == nil {
		err = fmt.Errorf("pgstore: releasing the migration lease: %w", relErr)
	}
	return err
}

// acquireMigrationLock creates the lease table if needed and claims the
// lease, polling while another migrator holds it; it returns this
// migrator's holder name.
func (s *Store) acquireMigrationLock(ctx context.Context) (string, error) {
	holder, err := migrationHolder()
	if err != nil {
		return "", err
	}
	failures := 0 // in a row: polling a held lease is not one
	for {
		got, err := s.tryMigrationLock(ctx, holder)
		switch {
		case err == nil && got:
			return holder, nil
		case err == nil:
			failures = 0
			err = sleep(ctx, migrationLockPoll)
		case failures < maxMigrateRetries && (isConcurrentDDL(err) || isRetryable(err)):
			// Two replicas creating the table at once, or a serialization
			// failure on the lease row: try again.
			failures++
			err = sleep(ctx, backoff(failures))
		}
		if err != nil {
			return "", fmt.Errorf("pgstore: taking the migration lease: %w", err)
		}
	}
}

func (s *Store) tryMigrationLock(ctx context.Context, holder string) (bool, error) {
	if _, err := s.pool.Exec(ctx, createMigrationLock); err != nil {
		return false, err
	}
	var got string
	err := s.pool.QueryRow(ctx, claimMigrationLock, holder, migrationLeaseTTL.Milliseconds()).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// renewMigrationLock extends the lease until ctx ends; a renewal that
// finds the lease no longer this holder's cancels ctx with
// errMigrationLeaseLost. A renewal that fails for another reason is tried
// again at the next tick: the lease has two more periods to run.
func (s *Store) renewMigrationLock(ctx context.Context, holder string, lost context.CancelCauseFunc) {
	tick := time.NewTicker(migrationLeaseRenew)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var got string
		err := s.pool.QueryRow(ctx, renewMigrationLock, holder, migrationLeaseTTL.Milliseconds()).Scan(&got)
		if errors.Is(err, pgx.ErrNoRows) {
			lost(errMigrationLeaseLost)
			return
		}
	}
}

// migrationHolder names this migrator uniquely, so that releasing or
// renewing never touches another migrator's lease.
func migrationHolder() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("pgstore: naming the migration lease: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
