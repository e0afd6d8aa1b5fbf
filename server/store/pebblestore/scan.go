package pebblestore

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// ctxCheckEvery is how many entries a scan reads between looks at its
// context, so that a long listing or count stops soon after its caller
// gives up.
const ctxCheckEvery = 256

// scanConsumer calls fn with each entry of consumer in table (a row table
// or 'p'/'q') whose name is greater than after and starts with prefix, in
// ascending name order, until fn says to stop or fails.
func (s *Store) scanConsumer(ctx context.Context, table byte, consumer, after string,
	fn func(name string, v []byte) (bool, error)) error {
	return s.scanPrefix(ctx, table, consumer, after, "", fn)
}

func (s *Store) scanPrefix(ctx context.Context, table byte, consumer, after, prefix string,
	fn func(name string, v []byte) (bool, error)) error {
	lower := rowKey(table, consumer, prefix)
	if after != "" {
		if a := append(rowKey(table, consumer, after), 0x00); bytes.Compare(a, lower) > 0 {
			lower = a
		}
	}
	upper := prefixEnd(consumerPrefix(table, consumer))
	if prefix != "" {
		upper = prefixEnd(rowKey(table, consumer, prefix))
	}
	head := len(consumerPrefix(table, consumer))
	return s.iterate(ctx, lower, upper, func(k, v []byte) (bool, error) {
		return fn(string(k[head:]), v)
	})
}

// iterate calls fn with each key and value in [lower, upper) in order
// (upper nil: to the end), until fn says to stop or fails. Both slices are
// valid only during the call.
func (s *Store) iterate(ctx context.Context, lower, upper []byte, fn func(k, v []byte) (bool, error)) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if n++; n%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		more, err := fn(it.Key(), v)
		if err != nil || !more {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	return ctx.Err()
}

// getRow reads the row at k and decodes it; nil, nil when there is none.
func getRow[T any](r pebble.Reader, k []byte, decode func(v []byte) (*T, error)) (*T, error) {
	v, closer, err := r.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return decode(v)
}

// listing is a page of one consumer's rows in name order, after After
// and starting with Prefix: the rows of the table Rows, or with ByLease
// those whose lease has expired, found through the table's index of leases
// (Leases). Keep says which rows the page holds, at most Limit; Op names
// the read in its errors.
type listing[T any] struct {
	Op                      string
	Rows, Leases            byte
	ByLease                 bool
	Consumer, After, Prefix string
	Limit                   int
	Decode                  func(v []byte, consumer, name string) (*T, error)
	Keep                    func(row *T, at time.Time) bool
}

// listRows reads the page l names, on the clock read once.
func listRows[T any](s *Store, ctx context.Context, l listing[T]) ([]T, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	at := now()
	table := l.Rows
	if l.ByLease {
		table = l.Leases
	}
	var out []T
	err := s.scanPrefix(ctx, table, l.Consumer, l.After, l.Prefix, func(name string, v []byte) (bool, error) {
		decode := func(v []byte) (*T, error) { return l.Decode(v, l.Consumer, name) }
		row, err := listedRow(l.ByLease, v, at, func() (*T, error) {
			return getRow(s.db, rowKey(l.Rows, l.Consumer, name), decode)
		}, decode)
		if err != nil {
			return false, err
		}
		if row != nil && l.Keep(row, at) {
			out = append(out, *row)
		}
		return len(out) < l.Limit, nil
	})
	if err != nil {
		return nil, dbError(l.Op, err)
	}
	return out, nil
}

// listedRow is the row a listing visits at the entry v: decoded from v
// when the listing walks the rows' own table, or, when it walks their
// index of leases (byLease, the queue of expired leases), read by get
// once the lease has expired at at, and nil while it is live.
func listedRow[T any](byLease bool, v []byte, at time.Time, get func() (*T, error), decode func(v []byte) (*T, error)) (*T, error) {
	if !byLease {
		return decode(v)
	}
	if readTime(v).After(at) {
		return nil, nil
	}
	return get()
}
