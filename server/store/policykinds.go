package store

import "context"

// KindPolicy is a consumer's policy of one kind: of its keys (Key, when Kind is
// KeyKind) or of its streams (Stream, when Kind is StreamKind). The
// engine's policy calls take and return it, so that one set of calls
// serves both kinds; the typed API keeps a pair of calls per kind.
type KindPolicy struct {
	Kind   Kind
	Key    ConsumerPolicy
	Stream ConsumerStreamPolicy
}

// PolicyCalls are a backend's put, get and delete of one kind of policy.
type PolicyCalls[P any] struct {
	Put    func(context.Context, P) (P, error)
	Get    func(ctx context.Context, consumer string) (P, error)
	Delete func(ctx context.Context, consumer string) (P, error)
}

// PolicyKinds derives the Engine's kind-parametrised policy calls
// (PutPolicyOf, GetPolicyOf, DeletePolicyOf) from a backend's calls of
// each kind: a backend embeds it, so that telling the kinds apart is
// written here once. A kind it does not know is ErrUnknownKind.
type PolicyKinds struct {
	Keys    PolicyCalls[ConsumerPolicy]
	Streams PolicyCalls[ConsumerStreamPolicy]
}

// PutPolicyOf creates or replaces the policy of p's kind.
func (k PolicyKinds) PutPolicyOf(ctx context.Context, p KindPolicy) (KindPolicy, error) {
	switch p.Kind {
	case KeyKind:
		r, err := k.Keys.Put(ctx, p.Key)
		return KindPolicy{Kind: KeyKind, Key: r}, err
	case StreamKind:
		r, err := k.Streams.Put(ctx, p.Stream)
		return KindPolicy{Kind: StreamKind, Stream: r}, err
	}
	return KindPolicy{}, ErrUnknownKind
}

// GetPolicyOf returns a consumer's policy of kind, or ErrNoPolicy.
func (k PolicyKinds) GetPolicyOf(ctx context.Context, kind Kind, consumer string) (KindPolicy, error) {
	return byConsumer(ctx, kind, consumer, k.Keys.Get, k.Streams.Get)
}

// DeletePolicyOf deletes a consumer's policy of kind and returns it, or
// ErrNoPolicy.
func (k PolicyKinds) DeletePolicyOf(ctx context.Context, kind Kind, consumer string) (KindPolicy, error) {
	return byConsumer(ctx, kind, consumer, k.Keys.Delete, k.Streams.Delete)
}

// KindStats is the counts of one kind: of a consumer's records (Keys,
// when Kind is KeyKind) or of its streams (Streams, when StreamKind).
type KindStats struct {
	Kind    Kind
	Keys    []ConsumerStats
	Streams []ConsumerStreamStats
}

// StatsByKind runs the backend's count of kind for consumer ("" for every
// consumer): the one place a backend's StatsOf tells the kinds apart.
func StatsByKind(ctx context.Context, kind Kind, consumer string,
	keys func(context.Context, string) ([]ConsumerStats, error),
	streams func(context.Context, string) ([]ConsumerStreamStats, error)) (KindStats, error) {
	switch kind {
	case KeyKind:
		s, err := keys(ctx, consumer)
		return KindStats{Kind: kind, Keys: s}, err
	case StreamKind:
		s, err := streams(ctx, consumer)
		return KindStats{Kind: kind, Streams: s}, err
	}
	return KindStats{}, ErrUnknownKind
}

// byConsumer runs the call of kind for consumer.
func byConsumer(ctx context.Context, kind Kind, consumer string,
	keys func(context.Context, string) (ConsumerPolicy, error),
	streams func(context.Context, string) (ConsumerStreamPolicy, error)) (KindPolicy, error) {
	switch kind {
	case KeyKind:
		p, err := keys(ctx, consumer)
		return KindPolicy{Kind: kind, Key: p}, err
	case StreamKind:
		p, err := streams(ctx, consumer)
		return KindPolicy{Kind: kind, Stream: p}, err
	}
	return KindPolicy{}, ErrUnknownKind
}
