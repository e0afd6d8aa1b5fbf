package storetest

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/dedupd/dedupd/server/store"
)

// AsEngine runs a typed store (the suite's model, or a test's fake) as a
// store.Engine, each command given to its typed call, so that tests can put
// the decorators, which wrap engines, in front of it. It is the inverse of
// store.NewAPI, for tests only: backends implement the Engine themselves.
func AsEngine(b store.Backend) store.Engine {
	return typedEngine{Backend: b, PolicyKinds: store.PolicyKinds{
		Keys:    store.PolicyCalls[store.ConsumerPolicy]{Put: b.PutPolicy, Get: b.GetPolicy, Delete: b.DeletePolicy},
		Streams: store.PolicyCalls[store.ConsumerStreamPolicy]{Put: b.PutStreamPolicy, Get: b.GetStreamPolicy, Delete: b.DeleteStreamPolicy}}}
}

type typedEngine struct {
	store.Backend
	store.PolicyKinds
}

func (e typedEngine) Apply(ctx context.Context, cmd store.Command) (store.Decision, error) {
	var (
		rec store.Record
		err error
	)
	switch c := cmd.(type) {
	case store.ClaimParams:
		r, err := e.Claim(ctx, c)
		return store.Decision{Record: r.Record, Write: r.Outcome == store.Acquired, Outcome: r.Outcome, RetryAfter: r.RetryAfter}, err
	case store.CompleteParams:
		rec, err = e.Complete(ctx, c)
	case store.RejectParams:
		rec, err = e.Reject(ctx, c)
	case store.ExtendLeaseParams:
		rec, err = e.ExtendLease(ctx, c)
	case store.DeleteRecordParams:
		rec, err = e.DeleteRecord(ctx, c.Consumer, c.Key)
	default:
		return store.Decision{}, fmt.Errorf("storetest: unknown command %T", cmd)
	}
	return store.Decision{Record: rec, Write: err == nil}, err
}

func (e typedEngine) ApplyStream(ctx context.Context, cmd store.StreamCommand) (store.StreamDecision, error) {
	var (
		d   store.StreamDecision
		err error
	)
	switch c := cmd.(type) {
	case store.ClaimStreamParams:
		var r store.StreamClaimResult
		r, err = e.ClaimStream(ctx, c)
		d = store.StreamDecision{Stream: r.Stream, Outcome: r.Outcome, RetryAfter: r.RetryAfter}
	case store.CompleteStreamParams:
		return finished(e.CompleteStream(ctx, c))
	case store.RejectStreamParams:
		return finished(e.RejectStream(ctx, c))
	case store.ReleaseStreamParams:
		d.Stream, err = e.ReleaseStream(ctx, c)
	case store.ExtendStreamLeaseParams:
		d.Stream, err = e.ExtendStreamLease(ctx, c)
	case store.ResetStreamParams:
		d.Stream, err = e.ResetStream(ctx, c)
	case store.ClaimParkedParams:
		var r store.ParkedClaimResult
		r, err = e.ClaimParked(ctx, c)
		d = store.StreamDecision{Stream: r.Stream, HandedOut: r.Event}
	case store.DropParkedParams:
		var r store.DropParkedResult
		r, err = e.DropParked(ctx, c)
		d = store.StreamDecision{Stream: r.Stream, Dropped: r.Dropped}
	case store.SkipGapParams:
		var r store.SkipGapResult
		r, err = e.SkipGap(ctx, c)
		d = store.StreamDecision{Stream: r.Stream, Skipped: &r.Skipped}
	default:
		return store.StreamDecision{}, fmt.Errorf("storetest: unknown stream command %T", cmd)
	}
	return d, err
}

// finished is the decision a finish returned.
func finished(r store.StreamFinishResult, err error) (store.StreamDecision, error) {
	return store.StreamDecision{Stream: r.Stream, HandedOut: r.Next}, err
}

// EngineMethodsDecided fails t unless decided names every method of
// store.Engine, and nothing else: a decorator's test lists how the
// decorator treats each (observes, caches, wakes, passes through), so that
// a method added to the Engine fails that test until it is decided there.
func EngineMethodsDecided(t *testing.T, decided map[string]string) {
	t.Helper()
	engine := reflect.TypeFor[store.Engine]()
	for m := range engine.Methods() {
		if name := m.Name; decided[name] == "" {
			t.Errorf("store.Engine.%s is not decided here: say what this decorator does with it", name)
		}
	}
	for name := range decided {
		if _, ok := engine.MethodByName(name); !ok {
			t.Errorf("%s is decided here but is no method of store.Engine", name)
		}
	}
}

// CommandsDecided fails t unless decide reports every key and stream
// command decided: decide is a decorator's own classification of commands,
// so a command added to package store fails the test until it is decided.
func CommandsDecided(t *testing.T, decide func(cmd any) bool) {
	t.Helper()
	for _, cmd := range store.Commands() {
		if !decide(cmd) {
			t.Errorf("command %T is not decided", cmd)
		}
	}
	for _, cmd := range store.StreamCommands() {
		if !decide(cmd) {
			t.Errorf("stream command %T is not decided", cmd)
		}
	}
}

// ReadStream is the typed GetStream, and GetParkedSummary when the
// summary is asked.
func (e typedEngine) ReadStream(ctx context.Context, p store.ReadStreamParams) (store.StreamRead, error) {
	var (
		r   store.StreamRead
		err error
	)
	if p.Parked {
		if r.Parked, err = e.GetParkedSummary(ctx, p.Consumer, p.Stream); err != nil {
			return store.StreamRead{}, err
		}
	}
	if r.Stream, err = e.GetStream(ctx, p.Consumer, p.Stream); err != nil {
		return store.StreamRead{}, err
	}
	return r, nil
}

// LookupBatch of the lone Lookup is the typed Lookup.
func (e typedEngine) LookupBatch(ctx context.Context, p store.LookupBatchParams) []store.LookupResult {
	if p.Single && len(p.Keys) == 1 {
		rec, err := e.Lookup(ctx, p.Consumer, p.Keys[0])
		return []store.LookupResult{{Record: rec, Err: err}}
	}
	return e.Backend.LookupBatch(ctx, p)
}

func (e typedEngine) Leases(ctx context.Context, kind store.Kind) ([]store.LeaseStats, error) {
	leases, err := store.PickKind(kind, e.PendingLeases, e.InFlightLeases)
	if err != nil {
		return nil, err
	}
	return leases(ctx)
}

func (e typedEngine) StatsOf(ctx context.Context, kind store.Kind, consumer string) (store.KindStats, error) {
	return store.StatsByKind(ctx, kind, consumer, e.Stats, e.StreamStats)
}

func (e typedEngine) Purge(ctx context.Context, p store.PurgeParams) (int64, error) {
	if p.CountOnly {
		return e.CountPurge(ctx, p)
	}
	n, err := e.PurgeBatch(ctx, p)
	return int64(n), err
}

func (e typedEngine) Reap(ctx context.Context, kind store.Kind, limit int) (int, error) {
	return store.ReapByKind(ctx, kind, limit, e.DeleteExpired, e.DeleteExpiredStreams)
}
