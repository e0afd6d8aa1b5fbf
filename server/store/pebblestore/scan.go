package pebblestore

import (
	"bytes"
	"context"

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
