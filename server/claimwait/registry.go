// Package claimwait lets a claim that finds its key (or stream) held by
// another caller wait on the server for the holder's outcome, instead of
// the caller polling with backoff.
//
// A waiting call re-runs its claim through the normal claim path (the
// store, whose pure transition function decides) each time it is woken:
//
//   - at once when this server serves the call that finishes the key or
//     stream (Complete, Reject, a FinishBatch item, CompleteStream,
//     RejectStream, ReleaseStream, ...): Notify is the store decorator
//     that wakes the waiters after each such call succeeds;
//   - when the holder's lease runs out (the claim reported how long was
//     left on it), so a lease expiry needs no faster polling;
//   - at least every Options.Poll otherwise: a finish served by another
//     replica is seen within that interval, since replicas share nothing
//     but the database and no cross-replica notification is used (there is
//     no LISTEN/NOTIFY on CockroachDB).
//
// While it sleeps a waiting call holds no store connection and gives back
// its admission slot (see Admission). Bounds on the waiters per key, per
// consumer and per server keep what callers can pin finite: past a bound
// the call is answered at once, as if it had not asked to wait.
package claimwait

import (
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Options (the dedupd flags' defaults).
const (
	DefaultMaxWait     = 30 * time.Second
	DefaultPoll        = time.Second
	DefaultPerKey      = 64
	DefaultPerConsumer = 1024
	DefaultPerServer   = 4096
)

// Options bound waiting on one server.
type Options struct {
	// MaxWait is the longest wait granted; longer ones are clamped to it.
	// Zero turns waiting off: every claim is answered at once.
	MaxWait time.Duration
	// Poll is the longest a waiter sleeps between two reads of the store:
	// the latency a waiter sees for a finish served by another replica.
	// Zero means DefaultPoll.
	Poll time.Duration
	// PerKey, PerConsumer and PerServer bound the waiters at once on one
	// key or stream, of one consumer, and in all. Zero or less: the
	// default.
	PerKey, PerConsumer, PerServer int
}

// Key names what a waiter waits on: a key of a consumer, or (Stream set)
// a stream of a consumer.
type Key struct {
	Consumer string
	Name     string
	Stream   bool
}

// Registry holds the waiters of one server. The zero value is not usable;
// a nil *Registry is: it grants no wait.
type Registry struct {
	opts Options

	// waiting counts the waiters, read without the lock by Wake, whose
	// callers (every finishing call) mostly find nobody waiting.
	waiting atomic.Int64
	// asleep counts the waiters between two claims, waiting to be woken.
	asleep atomic.Int64
	// refused counts the keys Watch refused at a bound.
	refused atomic.Int64

	mu        sync.Mutex
	keys      map[Key]map[*Waiter]struct{}
	consumers map[string]int

	// stopped is closed by Stop: every wait ends, and no new one starts.
	stopped  chan struct{}
	stopOnce sync.Once
}

// New returns a registry bounded by opts.
func New(opts Options) *Registry {
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.PerKey <= 0 {
		opts.PerKey = DefaultPerKey
	}
	if opts.PerConsumer <= 0 {
		opts.PerConsumer = DefaultPerConsumer
	}
	if opts.PerServer <= 0 {
		opts.PerServer = DefaultPerServer
	}
	return &Registry{opts: opts, keys: map[Key]map[*Waiter]struct{}{}, consumers: map[string]int{},
		stopped: make(chan struct{})}
}

// Stop ends every wait, each answering what its last claim found, and
// grants no more: a server shutting down answers its waiting claims at
// once instead of holding its graceful stop for up to MaxWait.
func (r *Registry) Stop() {
	if r != nil {
		r.stopOnce.Do(func() { close(r.stopped) })
	}
}

// Clamp is the wait granted for asked: at most MaxWait, zero when waiting
// is off or r is nil.
func (r *Registry) Clamp(asked time.Duration) time.Duration {
	if r == nil || asked <= 0 {
		return 0
	}
	return min(asked, r.opts.MaxWait)
}

// On reports whether r grants waits at all.
func (r *Registry) On() bool { return r != nil && r.opts.MaxWait > 0 }

// Waiting is the number of keys and streams being waited on now, counted
// once per waiter and key.
func (r *Registry) Waiting() int {
	if r == nil {
		return 0
	}
	return int(r.waiting.Load())
}

// Refused is the number of keys a bound kept from being waited on, since
// the registry began.
func (r *Registry) Refused() int64 {
	if r == nil {
		return 0
	}
	return r.refused.Load()
}

// Asleep is the number of waiters between two claims, waiting to be woken
// (a waiter on many keys of a batch counts once).
func (r *Registry) Asleep() int {
	if r == nil {
		return 0
	}
	return int(r.asleep.Load())
}

// Wake tells every waiter on k to claim again.
func (r *Registry) Wake(k Key) {
	if r == nil || r.waiting.Load() == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for w := range r.keys[k] {
		w.poke()
	}
}

// Join starts a waiter with no keys yet; Watch adds them, Leave ends it.
func (r *Registry) Join() *Waiter {
	return &Waiter{r: r, woken: make(chan struct{}, 1)}
}

// Waiter is one waiting call: the keys it waits on, and the channel its
// wakes arrive on. A wake that arrives while the call is busy claiming is
// kept (the channel has room for one), so none is lost between a claim
// and the sleep after it.
type Waiter struct {
	r     *Registry
	keys  []Key
	woken chan struct{}
}

func (w *Waiter) poke() {
	select {
	case w.woken <- struct{}{}:
	default:
	}
}

// Watch adds k to what w waits on, or reports false when a bound (per
// key, per consumer or per server) is reached: that key's claim is then
// answered at once.
func (w *Waiter) Watch(k Key) bool {
	r := w.r
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.stopped:
		return false
	default:
	}
	if int(r.waiting.Load()) >= r.opts.PerServer || r.consumers[k.Consumer] >= r.opts.PerConsumer ||
		len(r.keys[k]) >= r.opts.PerKey {
		r.refused.Add(1)
		return false
	}
	if _, dup := r.keys[k][w]; dup {
		return true // a key named twice in a batch waits once
	}
	set := r.keys[k]
	if set == nil {
		set = map[*Waiter]struct{}{}
		r.keys[k] = set
	}
	set[w] = struct{}{}
	r.consumers[k.Consumer]++
	r.waiting.Add(1)
	w.keys = append(w.keys, k)
	return true
}

// Leave removes w from every key it watches.
func (w *Waiter) Leave() {
	r := w.r
	if r == nil || len(w.keys) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range w.keys {
		set := r.keys[k]
		delete(set, w)
		if len(set) == 0 {
			delete(r.keys, k)
		}
		if r.consumers[k.Consumer]--; r.consumers[k.Consumer] == 0 {
			delete(r.consumers, k.Consumer)
		}
		r.waiting.Add(-1)
	}
	w.keys = nil
}
