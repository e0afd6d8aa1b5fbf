package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
)

// Apply runs a key command. A claim is one INSERT when the key is free
// (shared with concurrent claims under group commit), the read-modify-write
// transaction otherwise; DeleteRecord is one UPDATE (deleteRecord); the
// finishing commands are compare-and-sets, grouped when group commit is on.
// Each retries under its operation's label.
func (s *Store) Apply(ctx context.Context, cmd store.Command) (store.Decision, error) {
	switch c := cmd.(type) {
	case store.ClaimParams:
		rec, inserted, err := s.insertFreshClaim(ctx, c)
		r, err := s.finishClaim(ctx, c, rec, inserted, err)
		return store.Decision{Record: r.Record, Write: r.Outcome == store.Acquired, Outcome: r.Outcome, RetryAfter: r.RetryAfter}, err
	case store.DeleteRecordParams:
		return s.deleteRecord(ctx, c)
	}
	consumer, key := store.KeyOf(cmd)
	return s.finishKey(ctx, cmd.Op().Label, consumer, key, cmd)
}

// finishClaim answers a claim once its fresh insert is done: the inserted
// record, or, when the key had one, the read-modify-write path.
func (s *Store) finishClaim(ctx context.Context, p store.ClaimParams, rec store.Record, inserted bool, err error) (store.ClaimResult, error) {
	if err != nil {
		return store.ClaimResult{}, err
	}
	if inserted {
		return store.ClaimResult{Outcome: store.Acquired, Record: rec}, nil
	}
	d, err := s.readModifyWrite(ctx, store.OpClaim.Label, p.Consumer, p.Key, p)
	if err != nil {
		return store.ClaimResult{}, err
	}
	return store.ClaimResult{Outcome: d.Outcome, Record: d.Record, RetryAfter: d.RetryAfter}, nil
}

// offsetOrigin is the clock reading handed to store.Apply for a fresh claim.
// Only the differences between the times Apply returns are used; the
// database adds them to its own clock.
var offsetOrigin = time.Unix(0, 0)

// freshArgs is the record store.Apply decides for a key that has none, in
// the form the insert statements take: the lease and the retention as
// durations from the database's now.
type freshArgs struct {
	consumer, key, state, owner string
	digest                      []byte
	token, attempts             int64
	lease, life                 time.Duration
}

// insertFreshClaim inserts the record store.Apply decides for a key that has
// none, and reports false, changing nothing, when the key has a record
// (live or expired: Apply must see it). With group commit on, the insert
// may share a statement with other callers' claims.
func (s *Store) insertFreshClaim(ctx context.Context, p store.ClaimParams) (store.Record, bool, error) {
	args, err := freshArgsFor(p)
	if err != nil {
		return store.Record{}, false, err
	}
	if s.fresh != nil {
		r, err := s.fresh.do(ctx, freshClaim{p: p, args: args})
		return r.rec, r.inserted, err
	}
	return s.insertOne(ctx, p, args)
}

// freshArgsFor asks store.Apply for the record of a claim of a free key.
func freshArgsFor(p store.ClaimParams) (freshArgs, error) {
	d, err := store.Apply(nil, p, offsetOrigin)
	if err != nil {
		return freshArgs{}, err
	}
	r := d.Record
	return freshArgs{
		consumer: r.Consumer, key: r.Key, state: string(r.State), owner: r.Owner,
		digest: notNull(r.Digest), token: r.FencingToken, attempts: r.Attempts,
		lease: r.LeaseExpiresAt.Sub(r.CreatedAt), life: r.ExpiresAt.Sub(r.CreatedAt),
	}, nil
}

// insertOne inserts one fresh claim with the single-row statement.
func (s *Store) insertOne(ctx context.Context, p store.ClaimParams, a freshArgs) (store.Record, bool, error) {
	var at time.Time
	inserted := false
	err := s.withRetry(ctx, "claim", func(ctx context.Context) error {
		err := s.pool.QueryRow(ctx, insertFreshClaimSQL,
			a.consumer, a.key, a.state, a.digest, a.token, a.attempts, a.owner, a.lease, a.life).Scan(&at)
		inserted = err == nil
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	if err != nil || !inserted {
		return store.Record{}, false, err
	}
	rec, err := freshRecord(p, at)
	return rec, err == nil, err
}

// freshRecord is the row a fresh insert of p wrote at the database's
// clock at: Apply's record for p on no record at that clock, whose times
// freshArgsFor gave the insert as durations from it (see "Batches" in
// batch.go). Reading it back instead would only cost the database and
// pgx the columns.
func freshRecord(p store.ClaimParams, at time.Time) (store.Record, error) {
	d, err := store.Apply(nil, p, store.Now(at))
	return d.Record, err
}

// readModifyWrite applies cmd to the key's record with compareAndSet.
func (s *Store) readModifyWrite(ctx context.Context, op, consumer, key string, cmd store.Command) (store.Decision, error) {
	return compareAndSet(ctx, s, recordTable, op, consumer, key, cmd)
}

// lookup returns the key's record, or store.ErrNotFound when it has none or
// it has expired by the database's clock: LookupBatch of one key, in the
// single-row statement.
func (s *Store) lookup(ctx context.Context, consumer, key string) (store.Record, error) {
	var (
		rec store.Record
		now time.Time
	)
	err := s.withRetry(ctx, "lookup", func(ctx context.Context) error {
		var err error
		rec, err = scanRecord(s.pool.QueryRow(ctx, lookupSQL, consumer, key), &now)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return store.Record{}, err
	}
	if !store.IsLive(&rec, now) {
		return store.Record{}, store.ErrNotFound
	}
	return rec, nil
}

// Reap deletes up to limit records or streams that have expired by the
// database's clock (a stream's parked events go with it, by its foreign
// key).
func (s *Store) Reap(ctx context.Context, kind store.Kind, limit int) (int, error) {
	q, err := store.PickKind(kind, opSQL{"delete expired", deleteExpiredSQL},
		opSQL{"delete expired streams", deleteExpiredStreamsSQL})
	if err != nil {
		return 0, err
	}
	return s.deleteBatch(ctx, q.op, q.sql, limit)
}

// deleteBatch runs a DELETE of at most limit rows ($1) and returns how many
// it deleted.
func (s *Store) deleteBatch(ctx context.Context, op, sql string, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var deleted int
	err := s.withRetry(ctx, op, func(ctx context.Context) error {
		tag, err := s.pool.Exec(ctx, sql, limit)
		deleted = int(tag.RowsAffected())
		return err
	})
	if err != nil {
		return 0, err
	}
	return deleted, nil
}
