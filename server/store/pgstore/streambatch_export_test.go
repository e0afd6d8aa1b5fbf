package pgstore

import (
	"context"

	"github.com/dedupd/dedupd/server/store"
)

// StreamBatch runs stream commands as applyStream would with their
// read-free writes in one group-commit batch, deterministically: every
// command is planned first, in order, on the store's cache as it is; then
// between runs (when not nil), as another writer acting after the plans
// and before the statements; then the planned writes go as one batch; then
// each command's own continuation runs, in order. A command with no plan
// (a refusal, a write that needs a read) takes the plain path in its
// continuation, after the batch, so a test should not put one before a
// planned command of the same stream. Park work is not supported.
// Requires group commit on.
func StreamBatch(s *Store, cmds []store.StreamCommand, between func()) ([]store.StreamDecision, []error) {
	ctx := context.Background()
	calls := make([]*call[streamWrite, streamWriteResult], len(cmds))
	var batch []*call[streamWrite, streamWriteResult]
	for i, cmd := range cmds {
		k := streamKey(cmd)
		w, planned, parked := s.planStream("stream batch", k, cmd)
		if parked {
			panic("pgstore.StreamBatch: a command for the parked transaction")
		}
		if planned {
			calls[i] = &call[streamWrite, streamWriteResult]{ctx: ctx, req: w, wake: make(chan struct{})}
			batch = append(batch, calls[i])
		}
	}
	if between != nil {
		between()
	}
	if len(batch) > 0 {
		s.streamWrites.writeBatch(batch, nil)
	}
	ds, errs := make([]store.StreamDecision, len(cmds)), make([]error, len(cmds))
	for i, cmd := range cmds {
		var (
			r   streamWriteResult
			err error
		)
		if c := calls[i]; c != nil {
			<-c.wake
			r, err = c.resp, c.err
		}
		ds[i], errs[i] = s.settleStream(ctx, "stream batch", streamKey(cmd), cmd, r, err)
	}
	return ds, errs
}

// streamKey is the stream a command is for.
func streamKey(cmd store.StreamCommand) recordKey {
	switch p := cmd.(type) {
	case store.ClaimStreamParams:
		return recordKey{p.Consumer, p.Stream}
	case store.CompleteStreamParams:
		return recordKey{p.Consumer, p.Stream}
	case store.RejectStreamParams:
		return recordKey{p.Consumer, p.Stream}
	case store.ReleaseStreamParams:
		return recordKey{p.Consumer, p.Stream}
	case store.ExtendStreamLeaseParams:
		return recordKey{p.Consumer, p.Stream}
	case store.ResetStreamParams:
		return recordKey{p.Consumer, p.Stream}
	}
	panic("pgstore.StreamBatch: unknown stream command")
}
