package policy

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// streamPolicyStore serves stored stream policies through countingReads.
type streamPolicyStore struct {
	countingReads[store.ConsumerStreamPolicy]
}

func newStreamPolicyStore() *streamPolicyStore {
	return &streamPolicyStore{countingReads: countingReads[store.ConsumerStreamPolicy]{policies: map[string]store.ConsumerStreamPolicy{}}}
}

func (s *streamPolicyStore) GetStreamPolicy(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error) {
	return s.read(ctx, consumer, store.ErrNoPolicy)
}

func (s *streamPolicyStore) set(p store.ConsumerStreamPolicy) { s.put(p.Consumer, p) }

// streamTTL is the stream TTL in force for consumer inv.
func streamTTL(t *testing.T, p *Streams) time.Duration {
	t.Helper()
	r, err := p.For(context.Background(), "inv")
	if err != nil {
		t.Fatal(err)
	}
	return r.Policy.StreamTTL
}

func TestStreamPolicyCacheServesWithinItsBoundAndRereadsAfter(t *testing.T) {
	st := newStreamPolicyStore()
	clock := &fakeClock{now: time.Unix(1000, 0)}
	keys := newKeys(newCountingStore(), testDefaults, 5*time.Second, clock.Now)
	p := newStreams(st, keys, 0, 5*time.Second, clock.Now)

	if got := streamTTL(t, p); got != store.DefaultStreamTTL {
		t.Fatalf("no policy: stream ttl %s, want the default %s", got, store.DefaultStreamTTL)
	}
	// Another replica stores a policy: within the bound this one keeps the
	// cached answer, and reads the store no more.
	st.set(store.ConsumerStreamPolicy{Consumer: "inv", StreamTTL: time.Hour})
	clock.advance(4 * time.Second)
	if got := streamTTL(t, p); got != store.DefaultStreamTTL {
		t.Fatalf("within the bound: %s, want the cached default", got)
	}
	if n := st.reads.Load(); n != 1 {
		t.Fatalf("store read %d times within the bound, want 1", n)
	}
	clock.advance(time.Second)
	if got := streamTTL(t, p); got != time.Hour {
		t.Fatalf("at the bound: %s, want the stored 1h", got)
	}
	// A change through this server is seen at once.
	st.set(store.ConsumerStreamPolicy{Consumer: "inv", StreamTTL: 2 * time.Hour})
	p.Invalidate("inv")
	if got := streamTTL(t, p); got != 2*time.Hour {
		t.Fatalf("after Invalidate: %s, want 2h", got)
	}
}

// TestStreamPolicyCacheSharesOneReadPerExpiry: 100 calls that miss one
// consumer's stream policy together, the store held until every one has
// missed, read it once.
func TestStreamPolicyCacheSharesOneReadPerExpiry(t *testing.T) {
	st := newStreamPolicyStore()
	st.gate = make(chan struct{})
	keys := NewKeys(newCountingStore(), testDefaults, time.Hour)
	// The key policy is cached first, so that the calls below wait on
	// their contexts only for the stream policy.
	if _, err := keys.For(context.Background(), "inv"); err != nil {
		t.Fatal(err)
	}
	p := NewStreams(st, keys, 0, time.Hour)
	const callers = 100
	var wg sync.WaitGroup
	answers := make([]Stream, callers)
	errs := make([]error, callers)
	ctxs := make([]*joinSignal, callers)
	for i := range callers {
		ctxs[i] = &joinSignal{Context: context.Background(), waiting: make(chan struct{})}
		wg.Go(func() { answers[i], errs[i] = p.For(ctxs[i], "inv") })
	}
	// Each call waits on its context once it has joined a shared read, or,
	// without one, inside its own read of the store.
	for _, ctx := range ctxs {
		<-ctx.waiting
	}
	close(st.gate)
	wg.Wait()
	for i, err := range errs {
		if err != nil || answers[i].Policy.StreamTTL != store.DefaultStreamTTL {
			t.Fatalf("call %d: %+v, %v; want the default stream ttl", i, answers[i], err)
		}
	}
	if n := st.reads.Load(); n != 1 {
		t.Fatalf("%d concurrent misses read the store %d times, want 1", callers, n)
	}
}
