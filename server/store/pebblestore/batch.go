package pebblestore

import (
	"context"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/commitmetrics"
)

// batchKey is one key of a batch, with what it held before the batch and
// what it holds after the commands applied so far.
type batchKey struct {
	old, cur *store.Record
	dirty    bool
	err      error // the read failed: every command on the key gets it
}

// ApplyBatch locks the stripes of every key named (in stripe order, see
// stripes), applies the commands in batch order, each seeing the effect of
// those before it, and commits every write in one synced batch. A refusal
// changes nothing; if the commit fails, every item on a key the batch
// wrote gets ErrUnavailable (its answer may have rested on a write that
// was lost), and the others keep theirs.
func (s *Store) ApplyBatch(ctx context.Context, p store.BatchParams) []store.ItemResult {
	results := make([]store.ItemResult, len(p.Commands))
	if len(p.Commands) == 0 {
		return results
	}
	if err := s.enterFor(ctx); err != nil {
		return store.FailedBatch(len(p.Commands), err)
	}
	defer s.leave()
	names := make([][2]string, len(p.Commands))
	for i, cmd := range p.Commands {
		c, k := store.KeyOf(cmd)
		names[i] = [2]string{c, k}
	}
	defer s.keys.lockAll(names)()

	keys := make(map[[2]string]*batchKey, len(names))
	writes := 0 // the commands that wrote, which the commit carries
	for i, cmd := range p.Commands {
		bk := keys[names[i]]
		if bk == nil {
			bk = &batchKey{}
			bk.old, bk.err = s.readRecord(rowKey(tableRecord, names[i][0], names[i][1]), names[i][0], names[i][1])
			bk.cur = bk.old
			keys[names[i]] = bk
		}
		if bk.err != nil {
			results[i] = store.ItemResult{Err: dbError("reading record", bk.err)}
			continue
		}
		d, err := store.Apply(bk.cur, cmd, time.Now())
		results[i] = store.ResultOf(d, err)
		if err == nil && d.Write {
			rec := d.Record
			bk.cur, bk.dirty = &rec, true
			writes++
		}
	}
	b := s.db.NewBatch()
	defer b.Close()
	for name, bk := range keys {
		if bk.dirty {
			s.putRecord(b, rowKey(tableRecord, name[0], name[1]), bk.old, bk.cur)
		}
	}
	if b.Empty() {
		return results
	}
	if err := b.Commit(pebble.Sync); err != nil {
		err = dbError("writing records", err)
		for i := range results {
			if keys[names[i]].dirty {
				results[i] = store.ItemResult{Err: err}
			}
		}
		return results
	}
	s.commits.Commit(commitmetrics.KindPoll, writes)
	return results
}

// LookupBatch reads each key.
func (s *Store) LookupBatch(ctx context.Context, p store.LookupBatchParams) []store.LookupResult {
	results := make([]store.LookupResult, len(p.Keys))
	if err := s.enter(); err != nil {
		for i := range results {
			results[i].Err = err
		}
		return results
	}
	defer s.leave()
	at := now()
	for i, key := range p.Keys {
		results[i].Record, results[i].Err = s.lookup(ctx, p.Consumer, key, at)
	}
	return results
}
