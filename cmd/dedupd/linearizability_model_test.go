package main

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/store"
)

// The sequential model of one key for the linearizability check: the
// state is the key's record and each step is store.Apply, the state machine
// every backend runs. Leases in the checked histories are an hour long and
// records live for a day, so nothing expires while a test runs and the
// model's clock (a constant) never changes a decision; what the model
// compares leaves every timestamp out.

// lzOp is the kind of one call in a history.
type lzOp int

const (
	lzClaim lzOp = iota
	lzComplete
	lzReject
	lzExtend
	lzLookup
)

var lzOpNames = [...]string{"Claim", "Complete", "Reject", "ExtendLease", "Lookup"}

// lzInput is one call's arguments.
type lzInput struct {
	op        lzOp
	key       string
	digest    string
	owner     string
	token     int64
	result    string // Complete's result
	reason    string // Reject's reason
	retryable bool
}

// lzOutput is what one call returned, without timestamps. unknown marks a
// call that failed without an answer (UNAVAILABLE, deadline): it may or
// may not have taken effect.
type lzOutput struct {
	unknown bool
	reason  string // the ErrorInfo reason; "" for success
	outcome string // Claim's outcome
	record  string // the returned record, or the conflict's, as summarize gives it
}

// lzState is the model's record of one key; present is false while the key
// has none.
type lzState struct {
	present bool
	rec     store.Record
}

// lzPolicy is what the servers under test run with: long enough that
// nothing expires during a test.
var lzPolicy = store.Policy{DefaultLeaseTTL: time.Hour, CompletedTTL: 24 * time.Hour, RejectedTTL: 24 * time.Hour, ReleasedTTL: 24 * time.Hour}

// lzClock is the model's constant clock.
var lzClock = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

var lzModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(lzInput).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		parts := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, byKey[k])
		}
		return parts
	},
	Init: func() any { return lzState{} },
	Step: func(state, input, output any) (bool, any) {
		in, out := input.(lzInput), output.(lzOutput)
		want, next := lzStep(state.(lzState), in)
		return out.unknown || out == want, next
	},
	Equal: func(a, b any) bool {
		sa, sb := a.(lzState), b.(lzState)
		return sa.present == sb.present && (!sa.present || summarize(sa.rec) == summarize(sb.rec))
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(lzInput), output.(lzOutput)
		return fmt.Sprintf("%s(%s tok=%d dig=%s res=%s rej=%s/%v) -> %s", lzOpNames[in.op], in.key, in.token,
			in.digest, in.result, in.reason, in.retryable, out.describe())
	},
	DescribeState: func(state any) string {
		s := state.(lzState)
		if !s.present {
			return "absent"
		}
		return summarize(s.rec)
	},
}

// lzStep is the model: the output the call must give in state s, and the
// state after it.
func lzStep(s lzState, in lzInput) (lzOutput, lzState) {
	var stored *store.Record
	if s.present {
		rec := s.rec
		stored = &rec
	}
	if in.op == lzLookup {
		if stored == nil {
			return lzOutput{reason: rpcerrors.ReasonNotFound}, s
		}
		return lzOutput{record: summarize(*stored)}, s
	}
	d, err := store.Apply(stored, in.command(), lzClock)
	if err != nil {
		out := lzOutput{reason: reasonOf(err)}
		var conflict *store.ConflictError
		if errors.As(err, &conflict) {
			out.record = summarize(conflict.Record)
		}
		return out, s
	}
	out := lzOutput{record: summarize(d.Record)}
	if in.op == lzClaim {
		out.outcome = d.Outcome.String()
	}
	if d.Write {
		s = lzState{present: true, rec: d.Record}
	}
	return out, s
}

func (in lzInput) command() store.Command {
	const consumer = "lz"
	switch in.op {
	case lzClaim:
		return store.ClaimParams{Consumer: consumer, Key: in.key, Digest: []byte(in.digest), Owner: in.owner, Policy: lzPolicy}
	case lzComplete:
		return store.CompleteParams{Consumer: consumer, Key: in.key, FencingToken: in.token, Result: []byte(in.result), Policy: lzPolicy}
	case lzReject:
		return store.RejectParams{Consumer: consumer, Key: in.key, FencingToken: in.token, Policy: lzPolicy,
			Rejection: store.Rejection{Reason: in.reason, Retryable: in.retryable}}
	case lzExtend:
		return store.ExtendLeaseParams{Consumer: consumer, Key: in.key, FencingToken: in.token, Policy: lzPolicy}
	}
	panic("no command for " + lzOpNames[in.op])
}

// reasonOf maps a store error to the ErrorInfo reason the server sends, as
// docs/api.md documents it.
func reasonOf(err error) string {
	for sentinel, reason := range map[error]string{
		store.ErrDigestMismatch:  rpcerrors.ReasonDigestMismatch,
		store.ErrLeaseLost:       rpcerrors.ReasonLeaseLost,
		store.ErrAlreadyFinished: rpcerrors.ReasonAlreadyFinished,
		store.ErrNotFound:        rpcerrors.ReasonNotFound,
	} {
		if errors.Is(err, sentinel) {
			return reason
		}
	}
	return "unexpected: " + err.Error()
}

// summarize is a record without its timestamps, in one comparable string.
func summarize(r store.Record) string {
	rej := "-"
	if r.Rejection != nil {
		rej = fmt.Sprintf("%q/%q/%q/%v", r.Rejection.Reason, r.Rejection.Message, r.Rejection.Detail, r.Rejection.Retryable)
	}
	return fmt.Sprintf("%s tok=%d att=%d dig=%q own=%q res=%q rej=%s",
		r.State, r.FencingToken, r.Attempts, r.Digest, r.Owner, r.Result, rej)
}

var stateFromProto = map[dedupv1.State]store.State{
	dedupv1.State_STATE_PENDING:   store.Pending,
	dedupv1.State_STATE_COMPLETED: store.Completed,
	dedupv1.State_STATE_REJECTED:  store.Rejected,
	dedupv1.State_STATE_RELEASED:  store.Released,
}

// summarizeProto is summarize for a record the server sent.
func summarizeProto(p *dedupv1.Record) string {
	r := store.Record{State: stateFromProto[p.GetState()], Digest: p.GetDigest(), FencingToken: p.GetFencingToken(),
		Attempts: p.GetAttempts(), Owner: p.GetOwner(), Result: p.GetResult()}
	if rj := p.GetRejection(); rj != nil {
		r.Rejection = &store.Rejection{Reason: rj.GetReason(), Message: rj.GetMessage(), Detail: rj.GetDetail(), Retryable: rj.GetRetryable()}
	}
	return summarize(r)
}

func (o lzOutput) describe() string {
	switch {
	case o.unknown:
		return "no answer"
	case o.reason != "":
		return fmt.Sprintf("%s [%s]", o.reason, o.record)
	}
	return fmt.Sprintf("OK %s [%s]", o.outcome, o.record)
}

// lzNever is the return time of a call that got no answer: it may take
// effect at any point after its call.
const lzNever = math.MaxInt64

// TestLinearizabilityCheckerCatchesViolations feeds the checker histories
// written by hand, so that TestLinearizable's zero violations mean
// something: wrong ones must be refused, right ones (including calls that
// got no answer, whichever way they went) accepted.
func TestLinearizabilityCheckerCatchesViolations(t *testing.T) {
	pending1 := summarize(store.Record{State: store.Pending, FencingToken: 1, Attempts: 1, Digest: []byte("A"), Owner: "a"})
	pending1b := summarize(store.Record{State: store.Pending, FencingToken: 1, Attempts: 1, Digest: []byte("A"), Owner: "b"})
	done1 := summarize(store.Record{State: store.Completed, FencingToken: 1, Attempts: 1, Digest: []byte("A"), Owner: "a", Result: []byte("r")})
	claimA := lzInput{op: lzClaim, key: "k", digest: "A", owner: "a"}
	claimB := lzInput{op: lzClaim, key: "k", digest: "A", owner: "b"}
	complete1 := lzInput{op: lzComplete, key: "k", token: 1, result: "r"}
	lookup := lzInput{op: lzLookup, key: "k"}
	acquired := func(rec string) lzOutput { return lzOutput{outcome: "ACQUIRED", record: rec} }
	inProgress := lzOutput{outcome: "IN_PROGRESS", record: pending1}
	op := func(client int, in lzInput, call, ret int64, out lzOutput) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
	}
	cases := []struct {
		name    string
		history []porcupine.Operation
		legal   bool
	}{
		{"two acquisitions of one free key", []porcupine.Operation{
			op(0, claimA, 0, 10, acquired(pending1)), op(1, claimB, 5, 15, acquired(pending1b))}, false},
		{"overlapping claims, one acquires", []porcupine.Operation{
			op(0, claimA, 0, 10, acquired(pending1)), op(1, claimB, 5, 15, inProgress)}, true},
		{"in progress before anyone acquired", []porcupine.Operation{
			op(1, claimB, 0, 4, inProgress), op(0, claimA, 5, 10, acquired(pending1))}, false},
		{"completed result lost", []porcupine.Operation{
			op(0, claimA, 0, 1, acquired(pending1)), op(0, complete1, 2, 3, lzOutput{record: done1}),
			op(1, lookup, 4, 5, lzOutput{record: pending1})}, false},
		{"completed result read", []porcupine.Operation{
			op(0, claimA, 0, 1, acquired(pending1)), op(0, complete1, 2, 3, lzOutput{record: done1}),
			op(1, lookup, 4, 5, lzOutput{record: done1})}, true},
		{"unanswered claim that took effect", []porcupine.Operation{
			op(0, claimA, 0, lzNever, lzOutput{unknown: true}), op(1, lookup, 4, 5, lzOutput{record: pending1})}, true},
		{"unanswered claim that did not", []porcupine.Operation{
			op(0, claimA, 0, lzNever, lzOutput{unknown: true}), op(1, lookup, 4, 5, lzOutput{reason: rpcerrors.ReasonNotFound})}, true},
		{"read of a record nobody wrote", []porcupine.Operation{
			op(1, lookup, 4, 5, lzOutput{record: done1})}, false},
		{"lease lost although current", []porcupine.Operation{
			op(0, claimA, 0, 1, acquired(pending1)), op(0, complete1, 2, 3, lzOutput{reason: rpcerrors.ReasonLeaseLost, record: pending1})}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(lzModel, c.history); got != c.legal {
				t.Fatalf("checker says linearizable = %v, want %v", got, c.legal)
			}
		})
	}
}
