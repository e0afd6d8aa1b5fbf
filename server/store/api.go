package store

import "context"

// API is the typed contract (Backend) derived from an Engine: each typed
// write is its command given to Apply or ApplyStream, Lookup is a
// LookupBatch of one key, GetStream and GetParkedSummary are ReadStream,
// the kind pairs are the engine call of each Kind, and every other call
// is the engine's own. It is
// the one place the typed calls are written; backends and decorators
// implement the Engine only.
type API struct {
	Engine
}

var _ Backend = (*API)(nil)

// NewAPI derives the typed API from e.
func NewAPI(e Engine) *API { return &API{Engine: e} }

func (a *API) Claim(ctx context.Context, p ClaimParams) (ClaimResult, error) {
	d, err := a.Apply(ctx, p)
	return ClaimResult{Outcome: d.Outcome, Record: d.Record, RetryAfter: d.RetryAfter}, err
}

func (a *API) Complete(ctx context.Context, p CompleteParams) (Record, error) {
	d, err := a.Apply(ctx, p)
	return d.Record, err
}

func (a *API) Reject(ctx context.Context, p RejectParams) (Record, error) {
	d, err := a.Apply(ctx, p)
	return d.Record, err
}

func (a *API) ExtendLease(ctx context.Context, p ExtendLeaseParams) (Record, error) {
	d, err := a.Apply(ctx, p)
	return d.Record, err
}

func (a *API) DeleteRecord(ctx context.Context, consumer, key string) (Record, error) {
	d, err := a.Apply(ctx, DeleteRecordParams{Consumer: consumer, Key: key})
	return d.Record, err
}

// PendingLeases is Leases of the Pending records.
func (a *API) PendingLeases(ctx context.Context) ([]LeaseStats, error) {
	return a.Leases(ctx, KeyKind)
}

// InFlightLeases is Leases of the streams' claims in flight.
func (a *API) InFlightLeases(ctx context.Context) ([]LeaseStats, error) {
	return a.Leases(ctx, StreamKind)
}

// Stats is StatsOf the records.
func (a *API) Stats(ctx context.Context, consumer string) ([]ConsumerStats, error) {
	s, err := a.StatsOf(ctx, KeyKind, consumer)
	return s.Keys, err
}

// StreamStats is StatsOf the streams.
func (a *API) StreamStats(ctx context.Context, consumer string) ([]ConsumerStreamStats, error) {
	s, err := a.StatsOf(ctx, StreamKind, consumer)
	return s.Streams, err
}

// PutPolicy is PutPolicyOf a key policy.
func (a *API) PutPolicy(ctx context.Context, p ConsumerPolicy) (ConsumerPolicy, error) {
	r, err := a.PutPolicyOf(ctx, KindPolicy{Kind: KeyKind, Key: p})
	return r.Key, err
}

// GetPolicy is GetPolicyOf the key policy.
func (a *API) GetPolicy(ctx context.Context, consumer string) (ConsumerPolicy, error) {
	r, err := a.GetPolicyOf(ctx, KeyKind, consumer)
	return r.Key, err
}

// DeletePolicy is DeletePolicyOf the key policy.
func (a *API) DeletePolicy(ctx context.Context, consumer string) (ConsumerPolicy, error) {
	r, err := a.DeletePolicyOf(ctx, KeyKind, consumer)
	return r.Key, err
}

// PutStreamPolicy is PutPolicyOf a stream policy.
func (a *API) PutStreamPolicy(ctx context.Context, p ConsumerStreamPolicy) (ConsumerStreamPolicy, error) {
	r, err := a.PutPolicyOf(ctx, KindPolicy{Kind: StreamKind, Stream: p})
	return r.Stream, err
}

// GetStreamPolicy is GetPolicyOf the stream policy.
func (a *API) GetStreamPolicy(ctx context.Context, consumer string) (ConsumerStreamPolicy, error) {
	r, err := a.GetPolicyOf(ctx, StreamKind, consumer)
	return r.Stream, err
}

// DeleteStreamPolicy is DeletePolicyOf the stream policy.
func (a *API) DeleteStreamPolicy(ctx context.Context, consumer string) (ConsumerStreamPolicy, error) {
	r, err := a.DeletePolicyOf(ctx, StreamKind, consumer)
	return r.Stream, err
}

// PurgeBatch is Purge of one batch.
func (a *API) PurgeBatch(ctx context.Context, p PurgeParams) (int, error) {
	p.CountOnly = false
	n, err := a.Purge(ctx, p)
	return int(n), err
}

// CountPurge is Purge that only counts.
func (a *API) CountPurge(ctx context.Context, p PurgeParams) (int64, error) {
	p.CountOnly = true
	return a.Purge(ctx, p)
}

// DeleteExpired is Reap of the expired records.
func (a *API) DeleteExpired(ctx context.Context, limit int) (int, error) {
	return a.Reap(ctx, KeyKind, limit)
}

// DeleteExpiredStreams is Reap of the expired streams.
func (a *API) DeleteExpiredStreams(ctx context.Context, limit int) (int, error) {
	return a.Reap(ctx, StreamKind, limit)
}

// GetStream is ReadStream of the stream alone.
func (a *API) GetStream(ctx context.Context, consumer, stream string) (Stream, error) {
	r, err := a.ReadStream(ctx, ReadStreamParams{Consumer: consumer, Stream: stream})
	return r.Stream, err
}

// GetParkedSummary is ReadStream of the stream's parked summary.
func (a *API) GetParkedSummary(ctx context.Context, consumer, stream string) (ParkedSummary, error) {
	r, err := a.ReadStream(ctx, ReadStreamParams{Consumer: consumer, Stream: stream, Parked: true})
	return r.Parked, err
}

// Lookup is LookupBatch of one key, marked Single so that observers name
// it Lookup.
func (a *API) Lookup(ctx context.Context, consumer, key string) (Record, error) {
	keys := [1]string{key}
	r := a.LookupBatch(ctx, LookupBatchParams{Consumer: consumer, Keys: keys[:], Single: true})
	if len(r) != 1 {
		return Record{}, ErrNotFound
	}
	return r[0].Record, r[0].Err
}

func (a *API) ClaimStream(ctx context.Context, p ClaimStreamParams) (StreamClaimResult, error) {
	d, err := a.ApplyStream(ctx, p)
	return StreamClaimResult{Outcome: d.Outcome, Stream: d.Stream, RetryAfter: d.RetryAfter}, err
}

func (a *API) CompleteStream(ctx context.Context, p CompleteStreamParams) (StreamFinishResult, error) {
	d, err := a.ApplyStream(ctx, p)
	return StreamFinishResult{Stream: d.Stream, Next: d.HandedOut}, err
}

func (a *API) RejectStream(ctx context.Context, p RejectStreamParams) (StreamFinishResult, error) {
	d, err := a.ApplyStream(ctx, p)
	return StreamFinishResult{Stream: d.Stream, Next: d.HandedOut}, err
}

func (a *API) ReleaseStream(ctx context.Context, p ReleaseStreamParams) (Stream, error) {
	d, err := a.ApplyStream(ctx, p)
	return d.Stream, err
}

func (a *API) ExtendStreamLease(ctx context.Context, p ExtendStreamLeaseParams) (Stream, error) {
	d, err := a.ApplyStream(ctx, p)
	return d.Stream, err
}

func (a *API) ResetStream(ctx context.Context, p ResetStreamParams) (Stream, error) {
	d, err := a.ApplyStream(ctx, p)
	return d.Stream, err
}

func (a *API) ClaimParked(ctx context.Context, p ClaimParkedParams) (ParkedClaimResult, error) {
	d, err := a.ApplyStream(ctx, p)
	return ParkedClaimOf(d), err
}

func (a *API) DropParked(ctx context.Context, p DropParkedParams) (DropParkedResult, error) {
	d, err := a.ApplyStream(ctx, p)
	return DropParkedResult{Stream: d.Stream, Dropped: d.Dropped}, err
}

func (a *API) SkipGap(ctx context.Context, p SkipGapParams) (SkipGapResult, error) {
	d, err := a.ApplyStream(ctx, p)
	if err != nil || d.Skipped == nil {
		return SkipGapResult{Stream: d.Stream}, err
	}
	return SkipGapResult{Stream: d.Stream, Skipped: *d.Skipped}, nil
}
