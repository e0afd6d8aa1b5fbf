package policy

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// testPolicy and testDefaults are the server defaults of these tests.
var (
	testPolicy   = store.Policy{DefaultLeaseTTL: 30 * time.Second, CompletedTTL: time.Hour, RejectedTTL: time.Hour, ReleasedTTL: time.Hour}
	testDefaults = Defaults{Policy: testPolicy, Limits: Limits{MaxLeaseTTL: time.Hour, MaxResultBytes: 1 << 10}}
)

func TestResolveFillsUnsetFieldsFromDefaults(t *testing.T) {
	d := Defaults{
		Policy: store.Policy{DefaultLeaseTTL: 30 * time.Second, CompletedTTL: 24 * time.Hour, RejectedTTL: 12 * time.Hour, ReleasedTTL: time.Hour},
		Limits: Limits{MaxLeaseTTL: time.Hour, MaxResultBytes: 1000},
	}
	cases := []struct {
		name   string
		stored store.ConsumerPolicy
		want   Effective
	}{
		{"no policy", store.ConsumerPolicy{}, Effective{Store: d.Policy, MaxLeaseTTL: time.Hour, MaxResultBytes: 1000}},
		{"every field set", store.ConsumerPolicy{
			CompletedTTL: 72 * time.Hour, RejectedTTL: 2 * time.Hour, ReleasedTTL: 3 * time.Hour,
			DefaultLeaseTTL: time.Minute, MaxLeaseTTL: 2 * time.Hour, MaxResultBytes: 5, RequireDigest: true,
		}, Effective{
			Store:       store.Policy{DefaultLeaseTTL: time.Minute, CompletedTTL: 72 * time.Hour, RejectedTTL: 2 * time.Hour, ReleasedTTL: 3 * time.Hour},
			MaxLeaseTTL: 2 * time.Hour, MaxResultBytes: 5, RequireDigest: true,
		}},
		{"only completed ttl", store.ConsumerPolicy{CompletedTTL: time.Minute}, Effective{
			Store:       store.Policy{DefaultLeaseTTL: 30 * time.Second, CompletedTTL: time.Minute, RejectedTTL: 12 * time.Hour, ReleasedTTL: time.Hour},
			MaxLeaseTTL: time.Hour, MaxResultBytes: 1000,
		}},
		{"max lease below the default lease cuts the default", store.ConsumerPolicy{MaxLeaseTTL: 10 * time.Second}, Effective{
			Store:       store.Policy{DefaultLeaseTTL: 10 * time.Second, CompletedTTL: 24 * time.Hour, RejectedTTL: 12 * time.Hour, ReleasedTTL: time.Hour},
			MaxLeaseTTL: 10 * time.Second, MaxResultBytes: 1000,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Resolve(tc.stored, d); got != tc.want {
				t.Fatalf("Resolve = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// countingReads serves one stored value per consumer and counts the reads;
// when gate is set, each read waits for it.
type countingReads[V any] struct {
	mu       sync.Mutex
	policies map[string]V
	fail     error
	reads    atomic.Int64
	gate     chan struct{}
}

// read answers missing for a consumer without a value.
func (s *countingReads[V]) read(ctx context.Context, consumer string, missing error) (V, error) {
	var zero V
	s.reads.Add(1)
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return zero, ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return zero, s.fail
	}
	p, ok := s.policies[consumer]
	if !ok {
		return zero, missing
	}
	return p, nil
}

func (s *countingReads[V]) put(consumer string, p V) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policies[consumer] = p
}

// policyCountingStore serves stored key policies through countingReads.
type policyCountingStore struct {
	countingReads[store.ConsumerPolicy]
}

func (s *policyCountingStore) GetPolicy(ctx context.Context, consumer string) (store.ConsumerPolicy, error) {
	return s.read(ctx, consumer, store.ErrNoPolicy)
}

func (s *policyCountingStore) set(p store.ConsumerPolicy) { s.put(p.Consumer, p) }

func newCountingStore() *policyCountingStore {
	return &policyCountingStore{countingReads: countingReads[store.ConsumerPolicy]{policies: map[string]store.ConsumerPolicy{}}}
}

// fakeClock is a settable clock for the cache.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func completedTTL(t *testing.T, p *Keys, consumer string) time.Duration {
	t.Helper()
	e, err := p.For(context.Background(), consumer)
	if err != nil {
		t.Fatal(err)
	}
	return e.Store.CompletedTTL
}

func TestPolicyCacheServesWithinItsBoundAndRereadsAfter(t *testing.T) {
	st := newCountingStore()
	clock := &fakeClock{now: time.Unix(1000, 0)}
	p := newKeys(st, testDefaults, 5*time.Second, clock.Now)

	if got := completedTTL(t, p, "inv"); got != testPolicy.CompletedTTL {
		t.Fatalf("no policy: completed ttl %s, want the default %s", got, testPolicy.CompletedTTL)
	}
	// Another replica stores a policy: within the bound this one keeps the
	// cached answer, and reads the store no more.
	st.set(store.ConsumerPolicy{Consumer: "inv", CompletedTTL: 72 * time.Hour})
	clock.advance(4 * time.Second)
	if got := completedTTL(t, p, "inv"); got != testPolicy.CompletedTTL {
		t.Fatalf("within the bound: %s, want the cached default", got)
	}
	if n := st.reads.Load(); n != 1 {
		t.Fatalf("store read %d times within the bound, want 1", n)
	}
	clock.advance(time.Second)
	if got := completedTTL(t, p, "inv"); got != 72*time.Hour {
		t.Fatalf("at the bound: %s, want the stored 72h", got)
	}
	// A change through this server is seen at once.
	st.set(store.ConsumerPolicy{Consumer: "inv", CompletedTTL: time.Hour})
	p.Invalidate("inv")
	if got := completedTTL(t, p, "inv"); got != time.Hour {
		t.Fatalf("after Invalidate: %s, want 1h", got)
	}
}

func TestPolicyCacheOffReadsEveryCall(t *testing.T) {
	st := newCountingStore()
	p := NewKeys(st, testDefaults, 0)
	for i := range 3 {
		st.set(store.ConsumerPolicy{Consumer: "inv", CompletedTTL: time.Duration(i+1) * time.Hour})
		if got := completedTTL(t, p, "inv"); got != time.Duration(i+1)*time.Hour {
			t.Fatalf("call %d: %s, want the policy just stored", i, got)
		}
	}
}

func TestPolicyCacheDoesNotCacheErrors(t *testing.T) {
	st := newCountingStore()
	st.fail = store.ErrUnavailable
	p := NewKeys(st, testDefaults, time.Minute)
	if _, err := p.For(context.Background(), "inv"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("For = %v, want the store's ErrUnavailable", err)
	}
	st.mu.Lock()
	st.fail = nil
	st.mu.Unlock()
	if got := completedTTL(t, p, "inv"); got != testPolicy.CompletedTTL {
		t.Fatalf("after recovery: %s", got)
	}
}

// TestPolicyCacheSharesOneReadPerExpiry: calls that miss together wait for
// one read instead of each going to the store.
func TestPolicyCacheSharesOneReadPerExpiry(t *testing.T) {
	st := newCountingStore()
	st.gate = make(chan struct{})
	p := NewKeys(st, testDefaults, time.Minute)
	const callers = 20
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			_, err := p.For(context.Background(), "inv")
			errs <- err
		})
	}
	for st.reads.Load() == 0 { // the first read has started and waits
		time.Sleep(time.Millisecond)
	}
	// Give the others time to join the read in flight. A caller that has
	// not joined yet is served from the cache after it, so the count is
	// exactly one either way: the sleep only makes the sharing likely.
	time.Sleep(20 * time.Millisecond)
	close(st.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := st.reads.Load(); n != 1 {
		t.Fatalf("%d concurrent misses read the store %d times, want 1", callers, n)
	}
}

// TestPolicyCacheCallerCancelsWhileSharedReadGoesOn: a caller that gives up
// gets its context's error, and the read it started still serves the
// others.
func TestPolicyCacheCallerCancelsWhileSharedReadGoesOn(t *testing.T) {
	st := newCountingStore()
	st.gate = make(chan struct{})
	p := NewKeys(st, testDefaults, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := p.For(ctx, "inv")
		first <- err
	}()
	for st.reads.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	second := make(chan error, 1)
	go func() {
		_, err := p.For(context.Background(), "inv")
		second <- err
	}()
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller got %v, want context.Canceled", err)
	}
	close(st.gate)
	if err := <-second; err != nil {
		t.Fatalf("the other caller got %v, want the shared read's answer", err)
	}
}

// TestPolicyCacheRace runs lookups and invalidations of several consumers
// at once (go test -race), and checks that once the writers stop and
// invalidate, every reader sees the last stored policy.
func TestPolicyCacheRace(t *testing.T) {
	st := newCountingStore()
	p := NewKeys(st, testDefaults, time.Hour)
	consumers := []string{"a", "b", "c"}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 200 {
				c := consumers[(i+j)%len(consumers)]
				if _, err := p.For(context.Background(), c); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for _, c := range consumers {
		wg.Go(func() {
			for j := range 50 {
				st.set(store.ConsumerPolicy{Consumer: c, CompletedTTL: time.Duration(j+1) * time.Minute})
				p.Invalidate(c)
			}
		})
	}
	wg.Wait()
	for _, c := range consumers {
		if got := completedTTL(t, p, c); got != 50*time.Minute {
			t.Fatalf("%s: %s after the last change, want 50m", c, got)
		}
	}
}

// snapshotStore answers its first GetPolicy with the policy stored when the
// read started, but only once released: a read that runs long.
type snapshotStore struct {
	*policyCountingStore
	started, release chan struct{}
	once             sync.Once
}

func (s *snapshotStore) GetPolicy(ctx context.Context, consumer string) (store.ConsumerPolicy, error) {
	p, err := s.policyCountingStore.GetPolicy(ctx, consumer)
	first := false
	s.once.Do(func() { first = true })
	if first {
		close(s.started)
		<-s.release
	}
	return p, err
}

// joinSignal is a context that reports when For first waits on it, which
// happens only once the call has joined (or started) a shared read.
type joinSignal struct {
	context.Context
	once    sync.Once
	waiting chan struct{}
}

func (c *joinSignal) Done() <-chan struct{} {
	c.once.Do(func() { close(c.waiting) })
	return c.Context.Done()
}

// TestPolicyCacheJoinedSlowReadIsNotStalerThanTheBound: a call that joins
// a shared read started more than ttl before it does not take that read's
// answer, which may predate a change made through another replica more
// than ttl before the call.
func TestPolicyCacheJoinedSlowReadIsNotStalerThanTheBound(t *testing.T) {
	st := &snapshotStore{policyCountingStore: newCountingStore(), started: make(chan struct{}), release: make(chan struct{})}
	clock := &fakeClock{now: time.Unix(1000, 0)}
	p := newKeys(st, testDefaults, 5*time.Second, clock.Now)

	forInv := func(ctx context.Context, out chan<- time.Duration) {
		e, err := p.For(ctx, "inv")
		if err != nil {
			t.Error(err)
		}
		out <- e.Store.CompletedTTL
	}
	first := make(chan time.Duration, 1)
	go forInv(context.Background(), first)
	<-st.started // the first read has taken its snapshot: no policy

	// Another replica stores a policy; more than ttl later a call starts
	// and joins the read still in flight.
	st.set(store.ConsumerPolicy{Consumer: "inv", CompletedTTL: 72 * time.Hour})
	clock.advance(6 * time.Second)
	ctx := &joinSignal{Context: context.Background(), waiting: make(chan struct{})}
	second := make(chan time.Duration, 1)
	go forInv(ctx, second)
	<-ctx.waiting
	close(st.release)

	if got := <-first; got != testPolicy.CompletedTTL {
		t.Fatalf("the call that started before the change: %s, want the default %s", got, testPolicy.CompletedTTL)
	}
	if got := <-second; got != 72*time.Hour {
		t.Fatalf("a call starting 6s after the change, with a 5s bound: %s, want the stored 72h", got)
	}
}
