// Package throttle keeps dedupd's latency bounded when callers ask for more
// than it can give: a token bucket per consumer (so one consumer cannot
// starve the others) and a bound on the calls in flight and on those waiting
// to run (so a burst is refused at once instead of queueing behind the
// store).
package throttle

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/tap"

	"github.com/dedupd/dedupd/server/claimwait"
	"github.com/dedupd/dedupd/server/consumer"
	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/rpcmethod"
)

// sweepAt is the number of per-consumer buckets past which full (idle)
// buckets are dropped. Dropping a full bucket changes nothing, since a new
// one starts full; it only keeps memory bounded by the consumers active in
// the last burst/rate seconds. A sweep walks every bucket under the lock, so
// it runs at most once per refill period (burst/rate): sooner, the buckets
// it kept could not have filled up yet.
const sweepAt = 10000

// PerConsumer is a rate.Limiter for each consumer. It implements the
// go-grpc-middleware ratelimit.Limiter interface.
type PerConsumer struct {
	limit rate.Limit
	burst int

	// refill is how long an emptied bucket takes to fill: the least time
	// between sweeps that can find something new to drop.
	refill time.Duration
	now    func() time.Time

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
	sweptAt time.Time
}

// NewPerConsumer allows each consumer perSecond calls a second on average,
// and burst at once. burst <= 0 means ceil(perSecond).
func NewPerConsumer(perSecond float64, burst int) *PerConsumer {
	if burst <= 0 {
		burst = max(1, int(math.Ceil(perSecond)))
	}
	refill := time.Duration(float64(burst) / perSecond * float64(time.Second))
	return &PerConsumer{limit: rate.Limit(perSecond), burst: burst, refill: refill, now: time.Now,
		buckets: map[string]*rate.Limiter{}}
}

// Limit takes one token from the bucket of the call's consumer, or returns
// ErrRateLimited with the time until one is free. Only consumers' calls
// are limited: admin requests may name a consumer too, but an
// operator's call must not use up that consumer's rate. A name that is not
// a valid consumer gets no bucket: the limiter runs before validation, and
// a bucket would keep the name, up to a whole request in size, in memory
// long after the handler refused it (INVALID_ARGUMENT, before any store
// work).
//
// A batch call (a method whose request is a batch of items) is not
// limited here: its handler takes one token per item (TakeUpTo), so that
// a batch larger than what is left still gets its first items through.
func (p *PerConsumer) Limit(ctx context.Context) error {
	name, named := consumer.FromContext(ctx)
	if method, _ := grpc.Method(ctx); !named || !limited(method) || !consumer.Valid(name) {
		return nil
	}
	now := p.now()
	r := p.bucket(name).ReserveN(now, 1)
	delay := r.DelayFrom(now)
	if delay == 0 {
		return nil
	}
	r.CancelAt(now) // the caller is refused, not queued: give the token back
	return &rpcerrors.RetryAfterError{
		Err:   fmt.Errorf("consumer %q is over its rate of %g calls/s: %w", name, float64(p.limit), rpcerrors.ErrRateLimited),
		After: delay,
	}
}

// TakeUpTo takes up to n tokens from the consumer's bucket, for the items
// of a batch, and returns how many it took and, when fewer than n, how long
// until the next of the rest could be taken (at most a full bucket's worth
// is ever asked for at once).
func (p *PerConsumer) TakeUpTo(name string, n int) (int, time.Duration) {
	if !consumer.Valid(name) || n <= 0 {
		return n, 0
	}
	b := p.bucket(name)
	now := p.now()
	for {
		take := min(n, int(math.Floor(b.TokensAt(now))))
		if take <= 0 {
			break
		}
		r := b.ReserveN(now, take)
		if r.OK() && r.DelayFrom(now) == 0 {
			if take == n {
				return n, 0
			}
			return take, p.delayFor(b, now, min(n-take, p.burst))
		}
		r.CancelAt(now) // another caller took tokens meanwhile: look again
	}
	return 0, p.delayFor(b, now, min(n, p.burst))
}

// delayFor is how long until k tokens are free in b, taking none.
func (p *PerConsumer) delayFor(b *rate.Limiter, now time.Time, k int) time.Duration {
	r := b.ReserveN(now, k)
	defer r.CancelAt(now)
	return max(r.DelayFrom(now), time.Millisecond)
}

func (p *PerConsumer) bucket(name string) *rate.Limiter {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.buckets[name]
	if ok {
		return b
	}
	if now := p.now(); len(p.buckets) >= sweepAt && now.Sub(p.sweptAt) >= p.refill {
		p.sweptAt = now
		for n, old := range p.buckets {
			if old.TokensAt(now) >= float64(p.burst) {
				delete(p.buckets, n)
			}
		}
	}
	b = rate.NewLimiter(p.limit, p.burst)
	p.buckets[name] = b
	return b
}

// UnaryServerInterceptor refuses calls over their consumer's rate with
// RESOURCE_EXHAUSTED, ErrorInfo RATE_LIMITED and a RetryInfo. (The
// go-grpc-middleware ratelimit interceptor takes the same Limiter but
// flattens its error into text, which would lose both details.)
func UnaryServerInterceptor(p *PerConsumer) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := p.Limit(ctx); err != nil {
			name, _ := consumer.FromContext(ctx)
			return nil, rpcerrors.Status(err, name, "").Err()
		}
		return handler(ctx, req)
	}
}

// InFlight bounds the calls running at once (max), and the calls that
// have arrived but are not running yet (waiting): their request not read
// yet, or read and on its way through the interceptors to the bound.
//
// A call is counted from its arrival, when its HTTP/2 stream opens (Tap),
// until its stream ends. One that would make more than max + waiting
// arrived is refused right there, before the server reads its request or
// starts a goroutine for it: a refusal costs the connection's reader a
// header frame, whatever else the server is doing. A call within the
// bound runs when it reaches the interceptor and a slot is free, and is
// refused there, without waiting, when none is. So the most calls in line
// ahead of a refusal is waiting, a count, not a time.
type InFlight struct {
	max, waiting int64
	running      atomic.Int64
	arrived      atomic.Int64
	onShed       func() // counts a refusal at arrival
}

// NewInFlight allows up to maxCalls calls at once, and maxWaiting more
// arrived behind them. onShed, when not nil, is told of every call refused
// at arrival (those refused at the interceptor are seen by the
// interceptors outside it).
func NewInFlight(maxCalls, maxWaiting int, onShed func()) *InFlight {
	return &InFlight{max: int64(maxCalls), waiting: int64(maxWaiting), onShed: onShed}
}

// Tap counts a call from its arrival (grpc.InTapHandle) and refuses it with
// RESOURCE_EXHAUSTED / OVERLOADED when max + waiting calls have arrived and
// not ended. Methods exempt says are not counted (health checks). The count
// goes down when the in-flight interceptor is done with the call, before
// its answer is written, or else when its stream ends, however it ends
// (unknown method, a request that does not decode): grpc-go cancels the
// context of every stream then.
func (f *InFlight) Tap(exempt func(method string) bool) tap.ServerInHandle {
	return func(ctx context.Context, info *tap.Info) (context.Context, error) {
		if exempt(info.FullMethodName) {
			return ctx, nil
		}
		if f.arrived.Add(1) > f.max+f.waiting {
			f.arrived.Add(-1)
			if f.onShed != nil {
				f.onShed()
			}
			return nil, f.overloaded("", "refused on arrival")
		}
		t := &arrival{f: f}
		t.stop = context.AfterFunc(ctx, t.end)
		return context.WithValue(ctx, arrivalKey{}, t), nil
	}
}

// arrival is one call counted by Tap; end uncounts it, once.
type arrival struct {
	f     *InFlight
	ended atomic.Bool
	// stop cancels the AfterFunc that ends the arrival with its stream,
	// once the call has ended it: left alone, it would start a goroutine
	// for every call when the stream's context ends, only to find the
	// arrival already ended.
	stop func() bool
}

func (a *arrival) end() {
	if a.ended.CompareAndSwap(false, true) {
		a.f.arrived.Add(-1)
	}
}

type arrivalKey struct{}

// endArrival uncounts the call of ctx, if Tap counted it. It runs on the
// call's goroutine, which Tap's goroutine started after setting stop.
func endArrival(ctx context.Context) {
	if a, ok := ctx.Value(arrivalKey{}).(*arrival); ok {
		a.end()
		a.stop()
	}
}

// acquire takes a slot, or reports that none is free.
func (f *InFlight) acquire() bool {
	if f.running.Add(1) > f.max {
		f.running.Add(-1)
		return false
	}
	return true
}

func (f *InFlight) release() { f.running.Add(-1) }

// Running is the number of calls in flight now.
func (f *InFlight) Running() int64 { return f.running.Load() }

func (f *InFlight) refusal(ctx context.Context) error {
	name, _ := consumer.FromContext(ctx)
	return f.overloaded(name, "no slot free")
}

// overloaded is the refusal of a call; where says which bound refused it.
func (f *InFlight) overloaded(name, where string) error {
	err := fmt.Errorf("%d calls in flight and %d waiting, the most this server takes (%s): %w",
		f.max, f.waiting, where, rpcerrors.ErrOverloaded)
	return rpcerrors.Status(err, name, "").Err()
}

// UnaryServerInterceptor answers RESOURCE_EXHAUSTED / OVERLOADED at once
// when maxCalls calls are already running. A claim that asks to wait
// (claimwait.Asks) gets its slot in its context (claimwait.WithAdmission),
// so that while it waits for an in-flight outcome it gives the slot back
// (and stops counting as arrived), and takes one again, when one is free,
// to claim.
func (f *InFlight) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		defer endArrival(ctx)
		if !f.acquire() {
			return nil, f.refusal(ctx)
		}
		if !claimwait.Asks(req) {
			defer f.release()
			return handler(ctx, req)
		}
		s := &slot{f: f, ctx: ctx, held: true}
		defer s.Release()
		return handler(claimwait.WithAdmission(ctx, s), req)
	}
}

// slot is one unary call's in-flight slot, as claimwait.Admission. Only
// the call's own goroutine uses it: the handler, then the interceptor.
type slot struct {
	f    *InFlight
	ctx  context.Context
	held bool
}

// Release gives the slot back and uncounts the call's arrival (once).
func (s *slot) Release() {
	if s.held {
		s.held = false
		s.f.release()
		endArrival(s.ctx)
	}
}

// Resume takes a slot again if one is free.
func (s *slot) Resume() bool {
	if !s.held {
		s.held = s.f.acquire()
	}
	return s.held
}

// StreamServerInterceptor is the same bound for streaming calls.
func (f *InFlight) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		defer endArrival(ss.Context())
		if !f.acquire() {
			return f.refusal(ss.Context())
		}
		defer f.release()
		return handler(srv, ss)
	}
}

// limited reports whether a method spends its consumer's rate: the calls
// consumers make around their work, not an operator's, as the method table
// (server/rpcmethod) says.
func limited(method string) bool {
	m, ok := rpcmethod.Of(method)
	// A batch takes one token per item in its handler.
	return ok && !m.Admin && !m.Batch()
}
