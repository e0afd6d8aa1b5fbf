// Package storecopy copies an embedded store into a new Pebble store, row
// for row: `dedupd migrate-store`. The copy is one-shot (the source is
// locked for its duration, so no server writes to it meanwhile),
// resumable (each chunk is committed with the copy's progress, and a
// second run continues after the last committed chunk), and verified:
// the source and the copy are read back in full and must hold the same
// counts and the same digest of every row before the destination is
// marked finished and can be served.
package storecopy

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"log/slog"
	"time"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pebblestore"
)

// Source is a store whose every row can be read out in (consumer, name)
// order, expired rows included: sqlitestore and pebblestore both are.
type Source interface {
	ExportRecords(ctx context.Context, afterConsumer, afterKey string, limit int) ([]store.Record, error)
	ExportStreams(ctx context.Context, afterConsumer, afterStream string, limit int) ([]store.Stream, error)
	ExportParked(ctx context.Context, afterConsumer, afterStream string, afterSequence int64, limit int) ([]store.ParkedEvent, error)
	ListPolicies(ctx context.Context) ([]store.ConsumerPolicy, error)
	ExportStreamPolicies(ctx context.Context) ([]store.ConsumerStreamPolicy, error)
}

// The phases of a copy, in order, as its progress names them.
const (
	phaseRecords  = "records"
	phaseStreams  = "streams"
	phaseParked   = "parked"
	phasePolicies = "policies"
)

// DefaultChunk is how many rows one committed chunk holds.
const DefaultChunk = 1000

// Summary is what verification compares: the counts of each kind of row
// and one digest of all of them, in order.
type Summary struct {
	Records, Streams, Parked, Policies, StreamPolicies int64
	Digest                                             string
}

// Copy copies src into dst, resuming the copy dst holds if there is one
// (it must be of the same source), verifies it, and marks dst finished.
// source names the source in dst's progress; chunk is the rows per
// committed chunk (0: DefaultChunk).
func Copy(ctx context.Context, src Source, dst *pebblestore.Store, source string, chunk int, log *slog.Logger) (Summary, error) {
	if chunk <= 0 {
		chunk = DefaultChunk
	}
	state, resuming, err := dst.CopyState()
	if err != nil {
		return Summary{}, err
	}
	switch {
	case !resuming:
		state = pebblestore.CopyState{Source: source, Phase: phaseRecords}
	case state.Source != source:
		return Summary{}, fmt.Errorf("the destination holds an unfinished copy of %s, not of %s", state.Source, source)
	default:
		log.Info("resuming the copy", "phase", state.Phase, "after_consumer", state.AfterConsumer, "after", state.AfterName)
	}
	if state.Phase == phaseRecords {
		if err := copyRows(ctx, src.ExportRecords, &state, chunk, phaseStreams,
			func(r store.Record) (string, string) { return r.Consumer, r.Key },
			func(rs []store.Record, next pebblestore.CopyState) error {
				return dst.Import(ctx, pebblestore.Rows{Records: rs}, next)
			}); err != nil {
			return Summary{}, err
		}
	}
	if state.Phase == phaseStreams {
		if err := copyRows(ctx, src.ExportStreams, &state, chunk, phaseParked,
			func(s store.Stream) (string, string) { return s.Consumer, s.Stream },
			func(ss []store.Stream, next pebblestore.CopyState) error {
				return dst.Import(ctx, pebblestore.Rows{Streams: ss}, next)
			}); err != nil {
			return Summary{}, err
		}
	}
	if state.Phase == phaseParked {
		if err := copyParked(ctx, src, dst, &state, chunk); err != nil {
			return Summary{}, err
		}
	}
	policies, err := src.ListPolicies(ctx)
	if err != nil {
		return Summary{}, err
	}
	streamPolicies, err := src.ExportStreamPolicies(ctx)
	if err != nil {
		return Summary{}, err
	}
	if err := dst.Import(ctx, pebblestore.Rows{Policies: policies, StreamPolicies: streamPolicies}, state); err != nil {
		return Summary{}, err
	}
	want, err := Summarize(ctx, src, chunk)
	if err != nil {
		return Summary{}, fmt.Errorf("reading the source back: %w", err)
	}
	got, err := Summarize(ctx, dst, chunk)
	if err != nil {
		return Summary{}, fmt.Errorf("reading the copy back: %w", err)
	}
	if got != want {
		return Summary{}, fmt.Errorf("verification failed: the source holds %+v and the copy %+v; remove the destination and copy again", want, got)
	}
	if err := dst.FinishCopy(); err != nil {
		return Summary{}, err
	}
	return got, nil
}

// copyRows copies one kind of row from the cursor in state, a chunk at a
// time, each chunk committed with the cursor after it; at the end it moves
// state to next.
func copyRows[R any](ctx context.Context, export func(context.Context, string, string, int) ([]R, error),
	state *pebblestore.CopyState, chunk int, next string,
	name func(R) (string, string), write func([]R, pebblestore.CopyState) error) error {
	for {
		rows, err := export(ctx, state.AfterConsumer, state.AfterName, chunk)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			*state = pebblestore.CopyState{Source: state.Source, Phase: next}
			return write(nil, *state)
		}
		progress := *state
		progress.AfterConsumer, progress.AfterName = name(rows[len(rows)-1])
		if err := write(rows, progress); err != nil {
			return err
		}
		*state = progress
	}
}

// copyParked copies the parked events as copyRows does the other rows.
func copyParked(ctx context.Context, src Source, dst *pebblestore.Store, state *pebblestore.CopyState, chunk int) error {
	for {
		evs, err := src.ExportParked(ctx, state.AfterConsumer, state.AfterName, state.AfterSequence, chunk)
		if err != nil {
			return err
		}
		progress := pebblestore.CopyState{Source: state.Source, Phase: phasePolicies}
		if len(evs) > 0 {
			last := evs[len(evs)-1]
			progress = pebblestore.CopyState{Source: state.Source, Phase: phaseParked,
				AfterConsumer: last.Consumer, AfterName: last.Stream, AfterSequence: last.Sequence}
		}
		if err := dst.Import(ctx, pebblestore.Rows{Parked: evs}, progress); err != nil {
			return err
		}
		*state = progress
		if len(evs) == 0 {
			return nil
		}
	}
}

// Summarize reads every row of s and returns its counts and digest. The
// digest is over this package's own encoding of each field, so that it
// does not depend on how either store encodes a row, and an empty byte
// string counts the same as an absent one.
func Summarize(ctx context.Context, s Source, chunk int) (Summary, error) {
	if chunk <= 0 {
		chunk = DefaultChunk
	}
	h := sha256.New()
	var sum Summary
	var err error
	if sum.Records, err = digestRows(ctx, s.ExportRecords, chunk, h, func(r store.Record) (string, string) { return r.Consumer, r.Key },
		func(w *digester, r store.Record) {
			w.str(string(r.State)).bytes(r.Digest).int(r.FencingToken).int(r.Attempts).str(r.Owner).bytes(r.Result)
			w.rejection(r.Rejection).time(r.CreatedAt).time(r.UpdatedAt).time(r.LeaseExpiresAt).time(r.ExpiresAt)
		}); err != nil {
		return Summary{}, err
	}
	if sum.Streams, err = digestRows(ctx, s.ExportStreams, chunk, h, func(st store.Stream) (string, string) { return st.Consumer, st.Stream },
		func(w *digester, st store.Stream) {
			w.str(string(st.Mode)).int(st.HighWater).str(string(st.LastOutcome)).rejection(st.LastRejection)
			w.int(st.FinishedToken).int(st.Rejected).int(st.InFlight).bytes(st.Digest).int(st.FencingToken).str(st.Owner)
			w.time(st.LeaseExpiresAt).time(st.CreatedAt).time(st.UpdatedAt).time(st.ExpiresAt)
			w.int(st.Parked).int(st.ParkedBytes).int(st.Skipped).bool(st.LastSkipped != nil)
			if r := st.LastSkipped; r != nil {
				w.int(r.From).int(r.To).str(string(r.Cause)).time(r.At)
			}
		}); err != nil {
		return Summary{}, err
	}
	if sum.Parked, err = digestParked(ctx, s, chunk, h); err != nil {
		return Summary{}, err
	}
	policies, err := s.ListPolicies(ctx)
	if err != nil {
		return Summary{}, err
	}
	w := &digester{h}
	for _, p := range policies {
		w.str("policy").str(p.Consumer).int(int64(p.CompletedTTL)).int(int64(p.RejectedTTL)).int(int64(p.ReleasedTTL))
		w.int(int64(p.DefaultLeaseTTL)).int(int64(p.MaxLeaseTTL)).int(p.MaxResultBytes).bool(p.RequireDigest).time(p.UpdatedAt)
	}
	streamPolicies, err := s.ExportStreamPolicies(ctx)
	if err != nil {
		return Summary{}, err
	}
	for _, p := range streamPolicies {
		w.str("stream policy").str(p.Consumer).int(int64(p.StreamTTL)).str(string(p.Mode)).str(string(p.Start))
		w.int(p.MaxParked).int(int64(p.GapTimeout)).str(string(p.OnGapTimeout)).time(p.UpdatedAt)
	}
	sum.Policies, sum.StreamPolicies = int64(len(policies)), int64(len(streamPolicies))
	sum.Digest = hex.EncodeToString(h.Sum(nil))
	return sum, nil
}

func digestRows[R any](ctx context.Context, export func(context.Context, string, string, int) ([]R, error), chunk int,
	h hash.Hash, name func(R) (string, string), fields func(*digester, R)) (int64, error) {
	var n int64
	var afterC, afterN string
	w := &digester{h}
	for {
		rows, err := export(ctx, afterC, afterN, chunk)
		if err != nil || len(rows) == 0 {
			return n, err
		}
		for _, r := range rows {
			c, nm := name(r)
			w.str(c).str(nm)
			fields(w, r)
		}
		n += int64(len(rows))
		afterC, afterN = name(rows[len(rows)-1])
	}
}

func digestParked(ctx context.Context, s Source, chunk int, h hash.Hash) (int64, error) {
	var n, afterSeq int64
	var afterC, afterS string
	w := &digester{h}
	for {
		evs, err := s.ExportParked(ctx, afterC, afterS, afterSeq, chunk)
		if err != nil || len(evs) == 0 {
			return n, err
		}
		for _, ev := range evs {
			w.str("parked").str(ev.Consumer).str(ev.Stream).int(ev.Sequence).bytes(ev.Digest).bytes(ev.Payload)
			w.int(ev.PayloadBytes).time(ev.ParkedAt)
		}
		n += int64(len(evs))
		last := evs[len(evs)-1]
		afterC, afterS, afterSeq = last.Consumer, last.Stream, last.Sequence
	}
}

// digester writes fields to a hash, each length-prefixed.
type digester struct{ h hash.Hash }

func (w *digester) bytes(b []byte) *digester {
	w.h.Write(binary.AppendUvarint(nil, uint64(len(b))))
	w.h.Write(b)
	return w
}

func (w *digester) str(s string) *digester { return w.bytes([]byte(s)) }

func (w *digester) int(v int64) *digester {
	w.h.Write(binary.AppendVarint(nil, v))
	return w
}

func (w *digester) bool(b bool) *digester {
	if b {
		return w.int(1)
	}
	return w.int(0)
}

func (w *digester) time(t time.Time) *digester {
	if t.IsZero() {
		return w.str("zero")
	}
	return w.int(t.UnixMicro())
}

func (w *digester) rejection(r *store.Rejection) *digester {
	if r == nil {
		return w.bool(false)
	}
	return w.bool(true).str(r.Reason).str(r.Message).bytes(r.Detail).bool(r.Retryable)
}
