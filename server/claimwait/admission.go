package claimwait

import "context"

// Admission is what a call holds while it runs and gives back while it
// waits: its slot under the server's bound on calls in flight. The
// in-flight interceptor puts it in the call's context (WithAdmission);
// this package only knows the two calls, so the interceptor and the
// handlers both depend on it, and neither on the other.
type Admission interface {
	// Release gives the slot back; a call that holds none does nothing.
	Release()
	// Resume takes a slot again, without waiting: false when none is free.
	// A call that holds its slot already gets true.
	Resume() bool
}

type admissionKey struct{}

// WithAdmission returns ctx carrying a.
func WithAdmission(ctx context.Context, a Admission) context.Context {
	return context.WithValue(ctx, admissionKey{}, a)
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
