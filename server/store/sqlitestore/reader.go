package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// reader is the read-only pool behind Lookup and Ping. In WAL mode each of
// its connections reads a consistent snapshot without waiting for the
// writer.
type reader struct {
	db           *sql.DB
	selectRecord *sql.Stmt
	selectOne    *sql.Stmt
}

func openReader(ctx context.Context, path string) (_ *reader, err error) {
	params := url.Values{}
	// query_only turns any stray write on this pool into an error instead
	// of a second writer contending for the lock.
	params.Set("_query_only", "1")
	db, err := sql.Open("sqlite", dsn(path, params))
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: opening %s: %w", path, err)
	}
	// Reads are CPU-bound in-process work, so more connections than cores
	// only add page caches; a few spare ones cover readers that block on I/O.
	size := max(4, 2*runtime.GOMAXPROCS(0))
	db.SetMaxOpenConns(size)
	db.SetMaxIdleConns(size)
	db.SetConnMaxIdleTime(5 * time.Minute)
	r := &reader{db: db}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if r.selectRecord, err = db.PrepareContext(ctx, selectRecord); err != nil {
		return nil, openError(path, "preparing lookup", err)
	}
	if r.selectOne, err = db.PrepareContext(ctx, "SELECT 1"); err != nil {
		return nil, openError(path, "preparing ping", err)
	}
	return r, nil
}

func (r *reader) lookup(ctx context.Context, consumer, key string, now time.Time) (store.Record, error) {
	rec, err := scanRecord(r.selectRecord.QueryRowContext(ctx, consumer, key), consumer, key)
	if err != nil {
		return store.Record{}, dbError("lookup", err)
	}
	if !store.IsLive(rec, now) {
		return store.Record{}, store.ErrNotFound
	}
	return *rec, nil
}

func (r *reader) ping(ctx context.Context) error {
	var one int
	if err := r.selectOne.QueryRowContext(ctx).Scan(&one); err != nil {
		return dbError("ping", err)
	}
	return nil
}

func (r *reader) close() error {
	var errs []error
	for _, stmt := range []*sql.Stmt{r.selectRecord, r.selectOne} {
		if stmt != nil {
			errs = append(errs, stmt.Close())
		}
	}
	return errors.Join(append(errs, r.db.Close())...)
}
