package claimwait

import (
	"context"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// Asks reports whether a request asks to wait (a Claim or ClaimStream with
// a wait, a ClaimBatch with an item that has one): only those get their
// admission in the context, so that the calls that cannot wait pay
// nothing for it.
func Asks(req any) bool {
	switch r := req.(type) {
	case *dedupv1.ClaimRequest:
		return r.GetWait() != nil
	case *dedupv1.ClaimStreamRequest:
		return r.GetWait() != nil
	case *dedupv1.ClaimBatchRequest:
		for _, it := range r.GetItems() {
			if it.GetWait() != nil {
				return true
			}
		}
	}
	return false
}

// Admission is what a call holds while it runs and gives back while it
// waits: its slot under the server's bound on calls in flight, and the
// reply bytes it reserved up front. The interceptors that hand them out
// put them in the call's context (WithAdmission); this package only knows
// the two calls, so the interceptors and the handlers both depend on it,
// and neither on the other.
type Admission interface {
	// Release gives the slot back; a call that holds none does nothing.
	Release()
	// Resume takes a slot again, without waiting: false when none is free.
	// A call that holds its slot already gets true.
	Resume() bool
}

type admissionKey struct{}

// WithAdmission returns ctx carrying a, beside what ctx carries already:
// a waiting call gives all of it back, and resumes only once it has all
// of it again.
func WithAdmission(ctx context.Context, a Admission) context.Context {
	if outer, ok := ctx.Value(admissionKey{}).(Admission); ok {
		a = both{outer, a}
	}
	return context.WithValue(ctx, admissionKey{}, a)
}

// both is two admissions held together.
type both struct{ outer, inner Admission }

func (b both) Release() {
	b.inner.Release()
	b.outer.Release()
}

func (b both) Resume() bool {
	if !b.outer.Resume() {
		return false
	}
	if !b.inner.Resume() {
		b.outer.Release() // not half: a slot held while the reply has no room would block others for nothing
		return false
	}
	return true
}

// admissionOf is the admission in ctx, or one that holds nothing (a call
// that no bound admitted, such as in the handlers' own tests).
func admissionOf(ctx context.Context) Admission {
	if a, ok := ctx.Value(admissionKey{}).(Admission); ok {
		return a
	}
	return unbounded{}
}

type unbounded struct{}

func (unbounded) Release()     {}
func (unbounded) Resume() bool { return true }
