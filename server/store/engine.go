package store

import (
	"context"
	"errors"
)

// Engine is what a storage backend implements: every write through one of
// three methods, each decided by the pure rules (Apply, ApplyStream,
// ApplyStreamParked), and the reads. The typed API that handlers call
// (Backend) is derived from it once, by NewAPI, and the decorators the
// server stacks (Stack) wrap an Engine: a new write command passes through
// them with no edit, as a value of Command or StreamCommand.
//
// The rules of Store, StreamStore and their parts hold for each method as
// for the typed call it serves: atomic, safe for concurrent use, decided on
// the store's clock, a refusal changing nothing.
type Engine interface {
	Writer
	Reader
	Upkeep
	Reports
}

// Writer is every write of an Engine.
type Writer interface {
	// Apply runs one key command (Claim, Complete, Reject, ExtendLease,
	// DeleteRecord) as Apply decides it, in one atomic step, and returns
	// the decision that was stored.
	Apply(ctx context.Context, cmd Command) (Decision, error)

	// ApplyBatch: see Batcher.
	ApplyBatch(ctx context.Context, p BatchParams) []ItemResult

	// ApplyStream runs one stream command as ApplyStreamParked decides it,
	// the stream and its parked events in one atomic step. A ClaimParked
	// naming no stream tries the consumer's streams with a ready event
	// (see ClaimParkedOf) and returns a zero decision when none has one.
	ApplyStream(ctx context.Context, cmd StreamCommand) (StreamDecision, error)
}

// Reader is the reads the observing decorator traces or counts: records,
// streams and parked events. Lookup is LookupBatch of one key.
type Reader interface {
	LookupBatch(ctx context.Context, p LookupBatchParams) []LookupResult
	ListRecords(ctx context.Context, p ListParams) ([]Record, error)
	// ReadStream returns a live stream, or ErrNotFound when it is absent
	// or expired, and with p.Parked the summary of its parked events: the
	// typed GetStream and GetParkedSummary (see ReadStreamOf).
	ReadStream(ctx context.Context, p ReadStreamParams) (StreamRead, error)
	ListStreams(ctx context.Context, p ListStreamsParams) ([]Stream, error)
	ListParked(ctx context.Context, p ListParkedParams) ([]ParkedEvent, error)
	ListOpenGaps(ctx context.Context, p ListOpenGapsParams) ([]OpenGap, error)
	ParkedTotals(ctx context.Context) ([]ConsumerParked, error)
}

// Upkeep is the background work on a store: the reaper's deletes, the
// health ping, and closing.
type Upkeep interface {
	// Reap deletes at most limit expired rows of kind: records past their
	// ExpiresAt (DeleteExpired) or streams past theirs, with their parked
	// events (DeleteExpiredStreams).
	Reap(ctx context.Context, kind Kind, limit int) (int, error)
	Ping(ctx context.Context) error
	Close() error
}

// Reports is what operators and metrics read in bulk, the purges, and the
// policies: calls no decorator observes, caches or wakes on, except that
// a purge forgets what the replay cache holds.
type Reports interface {
	// StatsOf counts the records (Stats) or the streams (StreamStats) of
	// consumer, or of every consumer when it is "".
	StatsOf(ctx context.Context, kind Kind, consumer string) (KindStats, error)
	Leases(ctx context.Context, kind Kind) ([]LeaseStats, error)
	// Purge deletes at most p.Limit matching records in one atomic step
	// (PurgeBatch), or with p.CountOnly counts every matching record
	// (CountPurge).
	Purge(ctx context.Context, p PurgeParams) (int64, error)
	Policies
}

// Policies is the per-consumer policies of keys and of streams, one set of
// calls over the policy's Kind (a backend embeds PolicyKinds to get the
// three kind-parametrised ones); the typed API keeps PutPolicy,
// GetStreamPolicy and the rest for callers. Only key policies are listed.
type Policies interface {
	PutPolicyOf(ctx context.Context, p KindPolicy) (KindPolicy, error)
	GetPolicyOf(ctx context.Context, kind Kind, consumer string) (KindPolicy, error)
	DeletePolicyOf(ctx context.Context, kind Kind, consumer string) (KindPolicy, error)
	ListPolicies(ctx context.Context) ([]ConsumerPolicy, error)
}

// Kind says which of the two things a store keeps a kind-parametrised
// engine call is about: the keys' records or the streams. One engine call
// serves both typed calls of a pair (PendingLeases and InFlightLeases,
// DeleteExpired and DeleteExpiredStreams, ...), and PickKind is the one
// place a kind is told apart.
type Kind uint8

const (
	// KeyKind is the keys' records (Pending leases, expired records).
	KeyKind Kind = iota + 1
	// StreamKind is the streams (claims in flight, expired streams).
	StreamKind
)

// ErrUnknownKind is the answer of a kind-parametrised call to a kind it
// does not know: a programming error, since only the typed API chooses the
// kind.
var ErrUnknownKind = errors.New("store: unknown kind")

// ReapByKind runs the backend's delete of kind, records or streams, with
// limit: a backend's Reap that has one function per kind.
func ReapByKind(ctx context.Context, kind Kind, limit int, records, streams func(context.Context, int) (int, error)) (int, error) {
	reap, err := PickKind(kind, records, streams)
	if err != nil {
		return 0, err
	}
	return reap(ctx, limit)
}

// PickKind returns keys for KeyKind and streams for StreamKind, and
// ErrUnknownKind for any other kind.
func PickKind[T any](k Kind, keys, streams T) (T, error) {
	switch k {
	case KeyKind:
		return keys, nil
	case StreamKind:
		return streams, nil
	}
	var zero T
	return zero, ErrUnknownKind
}
