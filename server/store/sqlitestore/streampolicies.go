package sqlitestore

import (
	"context"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
)

// putStreamPolicy creates or replaces a consumer's stream policy.
func (s *Store) putStreamPolicy(ctx context.Context, p store.ConsumerStreamPolicy) (store.ConsumerStreamPolicy, error) {
	if err := p.Validate(); err != nil {
		return store.ConsumerStreamPolicy{}, err
	}
	var stored store.ConsumerStreamPolicy
	d := sqlstmt.SQLite
	err := s.w.write(ctx, func() error {
		var err error
		stored, err = scanStreamPolicy(s.w.conn.QueryRowContext(context.Background(), sqlstmt.PutStreamPolicy(d),
			d.Args(p.Consumer, p.StreamTTL.Microseconds(), string(p.Mode), string(p.Start),
				p.MaxParked, p.GapTimeout.Microseconds(), string(p.OnGapTimeout))...))
		return policyError("put stream policy", err)
	})
	return stored, err
}

// getStreamPolicy returns a consumer's stream policy, or store.ErrNoPolicy.
func (s *Store) getStreamPolicy(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error) {
	if s.closed.Load() {
		return store.ConsumerStreamPolicy{}, errClosed
	}
	p, err := scanStreamPolicy(s.r.db.QueryRowContext(ctx, sqlstmt.GetStreamPolicy, consumer))
	return p, policyError("get stream policy", err)
}

// deleteStreamPolicy deletes a consumer's stream policy and returns it.
func (s *Store) deleteStreamPolicy(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error) {
	var p store.ConsumerStreamPolicy
	err := s.w.write(ctx, func() error {
		var err error
		p, err = scanStreamPolicy(s.w.conn.QueryRowContext(context.Background(), sqlstmt.DeleteStreamPolicy, consumer))
		return policyError("delete stream policy", err)
	})
	return p, err
}

func scanStreamPolicy(row rowScanner) (store.ConsumerStreamPolicy, error) {
	return sqlstmt.ScanStreamPolicy(row, fromMicros)
}
