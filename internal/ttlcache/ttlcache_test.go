package ttlcache

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// source serves ints by key and counts its reads.
type source struct {
	mu     sync.Mutex
	values map[string]int
	fail   error
	reads  atomic.Int64
}

func newSource() *source { return &source{values: map[string]int{}} }

func (s *source) load(_ context.Context, key string) (int, error) {
	s.reads.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.values[key], s.fail
}

func (s *source) set(key string, v int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values[key] = v
}

func (s *source) setFail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

// clock is a settable clock. Tests move it only where the cache cannot
// be reading it (before a Get, or while a read waits on the test), so it
// needs no lock.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time          { return c.now }
func (c *clock) advance(d time.Duration) { c.now = c.now.Add(d) }

const ttl = 10 * time.Second

// step is one thing a case does, then what it expects. Every step checks
// the total of source reads so far; a step that gets checks the value too.
type step struct {
	advance    time.Duration // move the clock first
	set        string        // store value under set in the source
	value      int
	fail       error  // the source fails from now on (nil: it works)
	invalidate string // drop this key
	get        string // then Get this key
	want       int    // what Get returns
	wantErr    error  // the error Get returns
	reads      int64  // source reads in all, after the step
	entries    int    // Len after the step; -1 to skip
}

func TestCache(t *testing.T) {
	cases := []struct {
		name       string
		ttl        time.Duration
		maxEntries int
		steps      []step
	}{
		{"a fresh entry answers without a read", ttl, 0, []step{
			{set: "a", value: 1, get: "a", want: 1, reads: 1, entries: 1},
			{set: "a", value: 2, advance: ttl - time.Nanosecond, get: "a", want: 1, reads: 1, entries: 1},
		}},
		{"an entry expires ttl after its read started", ttl, 0, []step{
			{set: "a", value: 1, get: "a", want: 1, reads: 1, entries: 1},
			{set: "a", value: 2, advance: ttl, get: "a", want: 2, reads: 2, entries: 1},
			{advance: ttl - time.Nanosecond, get: "a", want: 2, reads: 2, entries: 1},
		}},
		{"invalidate drops one key, the next get reads it", ttl, 0, []step{
			{set: "a", value: 1, get: "a", want: 1, reads: 1, entries: 1},
			{set: "b", value: 1, get: "b", want: 1, reads: 2, entries: 2},
			{set: "a", value: 2, invalidate: "a", reads: 2, entries: 1},
			{get: "a", want: 2, reads: 3, entries: 2},
			{set: "b", value: 2, get: "b", want: 1, reads: 3, entries: 2},
		}},
		{"errors are returned and not cached", ttl, 0, []step{
			{fail: errBroken, get: "a", wantErr: errBroken, reads: 1, entries: 0},
			{set: "a", value: 1, get: "a", want: 1, reads: 2, entries: 1},
		}},
		{"a ttl of zero reads on every call and holds nothing", 0, 0, []step{
			{set: "a", value: 1, get: "a", want: 1, reads: 1, entries: 0},
			{set: "a", value: 2, get: "a", want: 2, reads: 2, entries: 0},
		}},
		// The first put sweeps and sets the next sweep ttl later; at that
		// point a has expired and b has not.
		{"a sweep drops expired entries and keeps live ones", ttl, 0, []step{
			{get: "a", reads: 1, entries: 1},
			{advance: ttl / 2, get: "b", reads: 2, entries: 2},
			{advance: ttl / 2, get: "c", reads: 3, entries: 2},
			{get: "b", reads: 3, entries: 2},
			{get: "a", reads: 4, entries: 3},
		}},
		{"no sweep before ttl has passed: expired entries wait", ttl, 0, []step{
			{get: "a", reads: 1, entries: 1},
			{advance: ttl / 2, get: "b", reads: 2, entries: 2},
			{advance: ttl/2 - time.Nanosecond, get: "c", reads: 3, entries: 3},
			{advance: time.Nanosecond, get: "b", reads: 3, entries: 3},
		}},
		{"a full cache drops expired entries first", ttl, 4, []step{
			{get: "a", reads: 1, entries: 1},
			{get: "b", reads: 2, entries: 2},
			{advance: ttl * 3 / 4, get: "c", reads: 3, entries: 3},
			{get: "d", reads: 4, entries: 4},
			{advance: ttl / 2, get: "e", reads: 5, entries: 3},
			{get: "c", reads: 5, entries: 3},
			{get: "d", reads: 5, entries: 3},
			{get: "e", reads: 5, entries: 3},
		}},
		// Full of live entries: down to min(4-1, 4*7/8) = 3, then the new one.
		{"a full cache of live entries stays within its bound and keeps the new key", ttl, 4, []step{
			{get: "a", reads: 1, entries: 1},
			{get: "b", reads: 2, entries: 2},
			{get: "c", reads: 3, entries: 3},
			{get: "d", reads: 4, entries: 4},
			{get: "e", reads: 5, entries: 4},
			{get: "e", reads: 5, entries: 4},
			{get: "f", reads: 6, entries: 4},
		}},
		{"a bound of one holds the latest key", ttl, 1, []step{
			{get: "a", reads: 1, entries: 1},
			{get: "b", reads: 2, entries: 1},
			{get: "b", reads: 2, entries: 1},
			{get: "a", reads: 3, entries: 1},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src, clk := newSource(), &clock{now: time.Unix(1000, 0)}
			c := New(src.load, Config{TTL: tc.ttl, MaxEntries: tc.maxEntries, Now: clk.Now})
			for i, s := range tc.steps {
				clk.advance(s.advance)
				if s.set != "" {
					src.set(s.set, s.value)
				}
				src.setFail(s.fail)
				if s.invalidate != "" {
					c.Invalidate(s.invalidate)
				}
				if s.get != "" {
					got, err := c.Get(context.Background(), s.get)
					if !errors.Is(err, s.wantErr) || err == nil && got != s.want {
						t.Fatalf("step %d: Get(%q) = %d, %v; want %d, %v", i, s.get, got, err, s.want, s.wantErr)
					}
				}
				if n := src.reads.Load(); n != s.reads {
					t.Fatalf("step %d: %d source reads in all, want %d", i, n, s.reads)
				}
				if s.entries >= 0 && c.Len() != s.entries {
					t.Fatalf("step %d: %d entries, want %d", i, c.Len(), s.entries)
				}
			}
		})
	}
}

var errBroken = errors.New("source broken")

// doneSignal is a context that counts the calls that wait on it. Get waits
// on its caller's context only once it has joined or started a shared read;
// a cache without one would hand the context to the source, which waits on
// it too. Either way, once every caller has waited, every caller has missed.
type doneSignal struct {
	context.Context
	once    sync.Once
	waiting *sync.WaitGroup
}

func (c *doneSignal) Done() <-chan struct{} {
	c.once.Do(c.waiting.Done)
	return c.Context.Done()
}

// TestConcurrentMissesShareOneRead: 100 callers missing one key at once,
// the source held until every one of them has missed, read it once.
func TestConcurrentMissesShareOneRead(t *testing.T) {
	const callers = 100
	var reads atomic.Int64
	release := make(chan struct{})
	load := func(ctx context.Context, key string) (string, error) {
		reads.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return "value of " + key, nil
	}
	c := New(load, Config{TTL: time.Hour})
	var waiting, done sync.WaitGroup
	waiting.Add(callers)
	got := make([]string, callers)
	errs := make([]error, callers)
	for i := range callers {
		done.Go(func() {
			ctx := &doneSignal{Context: context.Background(), waiting: &waiting}
			got[i], errs[i] = c.Get(ctx, "k")
		})
	}
	waiting.Wait()
	close(release)
	done.Wait()
	for i := range callers {
		if errs[i] != nil || got[i] != "value of k" {
			t.Fatalf("caller %d: %q, %v", i, got[i], errs[i])
		}
	}
	if n := reads.Load(); n != 1 {
		t.Fatalf("%d concurrent misses of one key read the source %d times, want 1", callers, n)
	}
}

// TestCacheRace gets, invalidates and overflows a small cache from many
// goroutines (go test -race). Once the writers stop, each key's last
// change was followed by its invalidation, so every key reads its last
// value.
func TestCacheRace(t *testing.T) {
	src := newSource()
	c := New(src.load, Config{TTL: time.Hour, MaxEntries: 3})
	keys := []string{"a", "b", "c", "d", "e"}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 300 {
				if _, err := c.Get(context.Background(), keys[(i+j)%len(keys)]); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for _, k := range keys {
		wg.Go(func() {
			for j := range 50 {
				src.set(k, j+1)
				c.Invalidate(k)
			}
		})
	}
	wg.Wait()
	for _, k := range keys {
		if got, err := c.Get(context.Background(), k); err != nil || got != 50 {
			t.Fatalf("%s: %d, %v after the last change, want 50", k, got, err)
		}
	}
	if n := c.Len(); n > 3 {
		t.Fatalf("%d entries, more than the bound of 3", n)
	}
}

func TestLoadTimeoutBoundsASharedRead(t *testing.T) {
	load := func(ctx context.Context, key string) (int, error) {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	c := New(load, Config{TTL: time.Hour, LoadTimeout: time.Millisecond})
	if _, err := c.Get(context.Background(), strconv.Itoa(1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get = %v, want the shared read's deadline", err)
	}
}

// TestJoinedSlowReadIsNotStalerThanTheTTL: a call that joins a shared read
// started more than ttl before it does not take that read's answer, which
// may predate a change made more than ttl before the call.
func TestJoinedSlowReadIsNotStalerThanTheTTL(t *testing.T) {
	src, clk := newSource(), &clock{now: time.Unix(1000, 0)}
	src.set("k", 1)
	var once sync.Once
	started, release := make(chan struct{}), make(chan struct{})
	load := func(ctx context.Context, key string) (int, error) {
		v, err := src.load(ctx, key)
		first := false
		once.Do(func() { first = true })
		if first { // the first read has taken its snapshot and runs long
			close(started)
			<-release
		}
		return v, err
	}
	c := New(load, Config{TTL: ttl, Now: clk.Now})
	first := make(chan int, 1)
	go func() {
		v, _ := c.Get(context.Background(), "k")
		first <- v
	}()
	<-started
	src.set("k", 2)
	clk.advance(ttl + time.Second)
	var joined sync.WaitGroup
	joined.Add(1)
	second := make(chan int, 1)
	go func() {
		v, _ := c.Get(&doneSignal{Context: context.Background(), waiting: &joined}, "k")
		second <- v
	}()
	joined.Wait()
	close(release)
	if got := <-first; got != 1 {
		t.Fatalf("the call that started the read: %d, want 1", got)
	}
	if got := <-second; got != 2 {
		t.Fatalf("a call joining a read older than the ttl: %d, want the value stored since, 2", got)
	}
}
