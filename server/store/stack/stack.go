// Package stack builds the one stack of store decorators a server puts in
// front of its storage engine, in their one order. The server and the
// tests (the conformance suite of every decorator) build it here, so that
// what is tested is what is served.
package stack

import (
	"github.com/dedupd/dedupd/server/claimwait"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/replaycache"
	"github.com/dedupd/dedupd/server/store/storetrace"
)

// Options choose the layers; the zero Options stack none.
type Options struct {
	// Cache, with a positive MaxBytes, answers claims of finished keys
	// from memory (replaycache).
	Cache replaycache.Options
	// Observe, when it names a tracer or a counter, makes spans of the
	// store's operations and counts them (storetrace.Observe).
	Observe storetrace.Options
	// Wake, when set, wakes this server's claim waiters on every write
	// that can end a wait (claimwait.Notify).
	Wake *claimwait.Registry
}

// Build stacks the decorators on e, innermost first: the replay cache, so
// that the observer sees and counts a replay from memory as the store's
// answer; the observer; the claim-wait notification, outermost, so that a
// waiter is woken only once the write has been observed as it ended. The
// typed API handlers call is derived from the result.
func Build(e store.Engine, o Options) store.Backend {
	if o.Cache.MaxBytes > 0 {
		e = replaycache.New(e, o.Cache)
	}
	if o.Observe.Tracer != nil || o.Observe.Counted != nil || o.Observe.StreamApplied != nil {
		e = storetrace.Observe(e, o.Observe)
	}
	if o.Wake != nil {
		e = claimwait.Notify(e, o.Wake)
	}
	return store.NewAPI(e)
}
