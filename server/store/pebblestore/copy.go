package pebblestore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/dedupd/dedupd/server/store"
)

// Copying into a store (`dedupd migrate-store`, server/store/storecopy):
// rows are imported verbatim, in chunks, each chunk committed in one
// synced batch together with the copy's progress, so that an interrupted
// copy resumes after its last committed chunk. While a copy is unfinished
// the directory holds copyStateKey, and Open refuses to serve it: a
// partial copy would answer "absent" for keys it has not reached yet.

var copyStateKey = []byte{tableMeta, 'c', 'o', 'p', 'y'}

// CopyState is the progress of a copy into the store.
type CopyState struct {
	// Source names what is being copied (the source data directory).
	Source string
	// Phase is the copier's; After is the last (consumer, name) copied in it.
	Phase         string
	AfterConsumer string
	AfterName     string
	AfterSequence int64 `json:",omitempty"`
}

// ErrCopyUnfinished is returned by Open for a directory that a copy has
// not finished filling.
var ErrCopyUnfinished = errors.New("a copy into this data directory (dedupd migrate-store) has not finished; run it again to resume it")

// OpenForCopy opens the store in dataDir to copy into: a new directory, or
// one an earlier, unfinished copy left. It refuses a directory that holds
// a store already in use.
func OpenForCopy(ctx context.Context, dataDir string) (*Store, error) {
	return open(dataDir, Options{}, true)
}

// CopyState returns the progress of the unfinished copy, or false when the
// store holds none (a new, empty store).
func (s *Store) CopyState() (CopyState, bool, error) {
	if err := s.enter(); err != nil {
		return CopyState{}, false, err
	}
	defer s.leave()
	return readCopyState(s.db)
}

func readCopyState(db *pebble.DB) (CopyState, bool, error) {
	v, closer, err := db.Get(copyStateKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return CopyState{}, false, nil
	}
	if err != nil {
		return CopyState{}, false, err
	}
	defer closer.Close()
	var st CopyState
	if err := json.Unmarshal(v, &st); err != nil {
		return CopyState{}, false, fmt.Errorf("copy state: %w", err)
	}
	return st, true, nil
}

// Rows are rows of every kind, as Import writes them.
type Rows struct {
	Records        []store.Record
	Streams        []store.Stream
	Parked         []store.ParkedEvent
	Policies       []store.ConsumerPolicy
	StreamPolicies []store.ConsumerStreamPolicy
}

// Import writes rows exactly as given, over whatever an earlier attempt
// wrote of them, and the copy's progress, in one synced batch.
func (s *Store) Import(ctx context.Context, rows Rows, progress CopyState) error {
	recs, streams, policies, streamPolicies := rows.Records, rows.Streams, rows.Policies, rows.StreamPolicies
	if err := s.enterFor(ctx); err != nil {
		return err
	}
	defer s.leave()
	b := s.db.NewBatch()
	defer b.Close()
	for i := range recs {
		r := &recs[i]
		k := rowKey(tableRecord, r.Consumer, r.Key)
		old, err := getRecord(s.db, k, r.Consumer, r.Key)
		if err != nil {
			return dbError("import", err)
		}
		s.putRecord(b, k, old, r)
	}
	for i := range streams {
		st := &streams[i]
		k := rowKey(tableStream, st.Consumer, st.Stream)
		old, err := getStream(s.db, k, st.Consumer, st.Stream)
		if err != nil {
			return dbError("import", err)
		}
		putStream(b, k, old, st)
	}
	for i := range rows.Parked {
		ev := &rows.Parked[i]
		_ = b.Set(parkedKey(ev.Consumer, ev.Stream, ev.Sequence), encodeParked(ev), nil)
	}
	for i := range policies {
		_ = b.Set(policyKey(tablePolicy, policies[i].Consumer), encodePolicy(&policies[i]), nil)
	}
	for i := range streamPolicies {
		_ = b.Set(policyKey(tableStreamPolicy, streamPolicies[i].Consumer), encodeStreamPolicy(&streamPolicies[i]), nil)
	}
	state, err := json.Marshal(progress)
	if err != nil {
		return err
	}
	_ = b.Set(copyStateKey, state, nil)
	if err := b.Commit(pebble.Sync); err != nil {
		return dbError("import", err)
	}
	return nil
}

// FinishCopy removes the copy's progress: from then on the directory opens
// as a store.
func (s *Store) FinishCopy() error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := s.db.Delete(copyStateKey, pebble.Sync); err != nil {
		return dbError("finishing copy", err)
	}
	return nil
}

// ExportRecords returns at most limit rows of records, expired ones
// included, after (afterConsumer, afterKey) in (consumer, key) order.
func (s *Store) ExportRecords(ctx context.Context, afterConsumer, afterKey string, limit int) ([]store.Record, error) {
	var out []store.Record
	err := s.export(ctx, tableRecord, afterConsumer, afterKey, func(c, name string, v []byte) (bool, error) {
		r, err := decodeRecord(v, c, name)
		if err == nil {
			out = append(out, *r)
		}
		return len(out) < limit, err
	})
	return out, err
}

// ExportStreams returns at most limit streams, expired ones included,
// after (afterConsumer, afterStream) in (consumer, stream) order.
func (s *Store) ExportStreams(ctx context.Context, afterConsumer, afterStream string, limit int) ([]store.Stream, error) {
	var out []store.Stream
	err := s.export(ctx, tableStream, afterConsumer, afterStream, func(c, name string, v []byte) (bool, error) {
		st, err := decodeStream(v, c, name)
		if err == nil {
			out = append(out, *st)
		}
		return len(out) < limit, err
	})
	return out, err
}

// ExportStreamPolicies returns every stream policy, ordered by consumer.
func (s *Store) ExportStreamPolicies(ctx context.Context) ([]store.ConsumerStreamPolicy, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	var out []store.ConsumerStreamPolicy
	err := s.iterate(ctx, []byte{tableStreamPolicy}, []byte{tableStreamPolicy + 1}, func(k, v []byte) (bool, error) {
		p, err := decodeStreamPolicy(v, string(k[1:]))
		out = append(out, p)
		return err == nil, err
	})
	if err != nil {
		return nil, dbError("export stream policies", err)
	}
	return out, nil
}

func (s *Store) export(ctx context.Context, table byte, afterConsumer, afterName string, fn func(c, name string, v []byte) (bool, error)) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	lower := []byte{table}
	if afterConsumer != "" || afterName != "" {
		lower = append(rowKey(table, afterConsumer, afterName), 0x00)
	}
	err := s.iterate(ctx, lower, []byte{table + 1}, func(k, v []byte) (bool, error) {
		c, name, ok := splitTuple(k[1:])
		if !ok {
			return false, errCorrupt
		}
		return fn(c, name, v)
	})
	if err != nil {
		return dbError("export", err)
	}
	return nil
}

// ExportParked returns at most limit parked events, payloads included,
// after (afterConsumer, afterStream, afterSequence) in that order.
func (s *Store) ExportParked(ctx context.Context, afterConsumer, afterStream string, afterSequence int64, limit int) ([]store.ParkedEvent, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	lower := []byte{tableParked}
	if afterConsumer != "" || afterStream != "" || afterSequence != 0 {
		lower = append(parkedKey(afterConsumer, afterStream, afterSequence), 0x00)
	}
	var out []store.ParkedEvent
	err := s.iterate(ctx, lower, []byte{tableParked + 1}, func(k, v []byte) (bool, error) {
		c, rest, ok := splitTuple(k[1:])
		if !ok {
			return false, errCorrupt
		}
		stream, seqBytes, ok := splitTuple([]byte(rest))
		if !ok || len(seqBytes) != 8 {
			return false, errCorrupt
		}
		ev, err := decodeParked(v, c, stream, int64(binary.BigEndian.Uint64([]byte(seqBytes))), true)
		if err == nil {
			out = append(out, ev)
		}
		return len(out) < limit, err
	})
	if err != nil {
		return nil, dbError("export parked events", err)
	}
	return out, nil
}
