// Package loglimit keeps a log line that can repeat once per call (a failed
// call, a store that does not answer) from flooding the log: each kind of
// line, keyed by what happened and its gRPC code, gets a token bucket, and
// the lines it refuses are counted, so the next line that passes says how
// many were dropped. An outage or an abusive caller then costs a few lines
// a second per kind, not one per call.
package loglimit

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/grpc/codes"
)

// Key is one kind of line: what happened (a gRPC method, or an event such
// as "store unavailable") and its code.
type Key struct {
	What string
	Code codes.Code
}

// maxKeys bounds the kinds tracked. Methods and codes are few, but a
// caller of Allow could key on something unbounded; past maxKeys every new
// kind shares one bucket.
const maxKeys = 1024

// overflow is the shared key of the kinds past maxKeys.
var overflow = Key{What: "(other)"}

// Limiter lets through, per Key, Burst lines at once and PerSecond lines a
// second after that.
type Limiter struct {
	perSecond rate.Limit
	burst     int
	now       func() time.Time

	mu    sync.Mutex
	kinds map[Key]*kind
}

type kind struct {
	bucket  *rate.Limiter
	dropped int64
}

// New returns a Limiter of perSecond lines a second per kind, burst at once.
func New(perSecond float64, burst int) *Limiter {
	return NewWithClock(perSecond, burst, time.Now)
}

// NewWithClock is New reading time from now, for tests.
func NewWithClock(perSecond float64, burst int, now func() time.Time) *Limiter {
	return &Limiter{perSecond: rate.Limit(perSecond), burst: max(1, burst), now: now, kinds: map[Key]*kind{}}
}

// Allow reports whether a line of kind k may be written now, and if so how
// many lines of that kind were dropped since the last one written.
func (l *Limiter) Allow(k Key) (ok bool, dropped int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kd := l.kinds[k]
	if kd == nil {
		if len(l.kinds) >= maxKeys {
			k = overflow
			kd = l.kinds[k]
		}
		if kd == nil {
			kd = &kind{bucket: rate.NewLimiter(l.perSecond, l.burst)}
			l.kinds[k] = kd
		}
	}
	if !kd.bucket.AllowN(l.now(), 1) {
		kd.dropped++
		return false, 0
	}
	dropped, kd.dropped = kd.dropped, 0
	return true, dropped
}
