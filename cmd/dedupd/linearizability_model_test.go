package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/anishathalye/porcupine"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// The sequential model of one key for the linearizability check, written
// from the documented contract (the state machine table and the error
// table of docs/api.md, the Store interface's doc comments), not from the
// server's code: it imports nothing of the server, so that a bug in
// store.Apply cannot make the model agree with it. Leases in the checked
// histories are an hour long and records live for a day, so no lease runs
// out and nothing expires while a test runs; the model has no clock, and
// what it compares leaves every timestamp out.

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

// lzRecord is what the check compares of a record: all of it but the
// timestamps. Rejected says a rejection is stored (Reason may be empty).
type lzRecord struct {
	State     string // PENDING, COMPLETED, REJECTED or RELEASED
	Token     int64
	Attempts  int64
	Digest    string
	Owner     string
	Result    string
	Rejected  bool
	Reason    string
	Message   string
	Detail    string
	Retryable bool
}

// lzOutput is what one call returned. unknown marks a call that failed
// without an answer (UNAVAILABLE, deadline, cancellation): it may or may
// not have taken effect.
type lzOutput struct {
	unknown   bool
	reason    string // the ErrorInfo reason; "" for success; for unknown, the status it came as
	outcome   string // Claim's outcome
	hasRecord bool
	record    lzRecord // the returned record, or the one a refusal carries
}

// lzState is the model's record of one key; present is false while the key
// has none.
type lzState struct {
	present bool
	rec     lzRecord
}

func lzAnswer(outcome string, r lzRecord) lzOutput {
	return lzOutput{outcome: outcome, hasRecord: true, record: r}
}

// lzRefusal: the record a refusal carries is the stored one, without what
// the caller stored (result, rejection message and detail) when that is
// over 1 KiB (docs/api.md, Errors).
func lzRefusal(reason string, r lzRecord) lzOutput {
	if len(r.Result)+len(r.Message)+len(r.Detail) > 1<<10 {
		r.Result, r.Message, r.Detail = "", "", ""
	}
	return lzOutput{reason: reason, hasRecord: true, record: r}
}

// lzStep is the model: the answer a call must get in state s, and the
// state after it. The reasons are the wire strings of docs/api.md.
func lzStep(s lzState, in lzInput) (lzOutput, lzState) {
	switch {
	case in.op == lzLookup && !s.present:
		return lzOutput{reason: "RECORD_NOT_FOUND"}, s
	case in.op == lzLookup:
		return lzAnswer("", s.rec), s
	case in.op == lzClaim:
		return lzClaimStep(s, in)
	case !s.present:
		// Complete, Reject, ExtendLease of a key without a record.
		return lzOutput{reason: "LEASE_LOST"}, s
	case in.token != s.rec.Token:
		// "A call with a token other than the key's current one gets
		// LEASE_LOST", whatever the state.
		return lzRefusal("LEASE_LOST", s.rec), s
	}
	r := s.rec
	sameRejection := r.Rejected && r.Reason == in.reason && r.Message == "" && r.Detail == "" && r.Retryable == in.retryable
	switch r.State {
	case "PENDING":
		switch in.op {
		case lzComplete:
			r.State, r.Result = "COMPLETED", in.result
		case lzReject:
			r.State = "REJECTED"
			if in.retryable {
				r.State = "RELEASED"
			}
			r.Rejected, r.Reason, r.Retryable = true, in.reason, in.retryable
		}
		// ExtendLease renews the lease, which the model does not compare.
		return lzAnswer("", r), lzState{present: true, rec: r}
	case "COMPLETED":
		if in.op == lzComplete && in.result == r.Result {
			return lzAnswer("", r), s // the same Complete again
		}
		return lzRefusal("ALREADY_FINISHED", r), s
	case "REJECTED":
		if in.op == lzReject && sameRejection {
			return lzAnswer("", r), s
		}
		return lzRefusal("ALREADY_FINISHED", r), s
	default: // RELEASED
		if in.op == lzReject && sameRejection {
			return lzAnswer("", r), s
		}
		return lzRefusal("LEASE_LOST", r), s
	}
}

// lzClaimStep: a free key is acquired with token 1; another digest is
// refused in every state; a live lease is in progress; an outcome is
// replayed; a released key is taken over with the next token.
func lzClaimStep(s lzState, in lzInput) (lzOutput, lzState) {
	if !s.present {
		r := lzRecord{State: "PENDING", Token: 1, Attempts: 1, Digest: in.digest, Owner: in.owner}
		return lzAnswer("ACQUIRED", r), lzState{present: true, rec: r}
	}
	r := s.rec
	if r.Digest != in.digest {
		return lzRefusal("DIGEST_MISMATCH", r), s
	}
	switch r.State {
	case "PENDING":
		return lzAnswer("IN_PROGRESS", r), s
	case "COMPLETED", "REJECTED":
		return lzAnswer(r.State, r), s
	}
	next := lzRecord{State: "PENDING", Token: r.Token + 1, Attempts: r.Attempts + 1, Digest: r.Digest, Owner: in.owner}
	return lzAnswer("ACQUIRED", next), lzState{present: true, rec: next}
}

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
		out := output.(lzOutput)
		want, next := lzStep(state.(lzState), input.(lzInput))
		return out.unknown || out == want, next
	},
	Equal: func(a, b any) bool { return a.(lzState) == b.(lzState) },
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
		return s.rec.String()
	},
}

func (r lzRecord) String() string {
	rej := "-"
	if r.Rejected {
		rej = fmt.Sprintf("%q/%q/%q/%v", r.Reason, r.Message, r.Detail, r.Retryable)
	}
	return fmt.Sprintf("%s tok=%d att=%d dig=%q own=%q res=%q rej=%s", r.State, r.Token, r.Attempts, r.Digest, r.Owner, r.Result, rej)
}

func (o lzOutput) describe() string {
	rec := "-"
	if o.hasRecord {
		rec = o.record.String()
	}
	switch {
	case o.unknown:
		return "no answer"
	case o.reason != "":
		return fmt.Sprintf("%s [%s]", o.reason, rec)
	}
	return fmt.Sprintf("OK %s [%s]", o.outcome, rec)
}

// lzRecordFromProto is the compared part of a record the server sent.
func lzRecordFromProto(p *dedupv1.Record) lzRecord {
	r := lzRecord{State: strings.TrimPrefix(p.GetState().String(), "STATE_"), Token: p.GetFencingToken(),
		Attempts: p.GetAttempts(), Digest: string(p.GetDigest()), Owner: p.GetOwner(), Result: string(p.GetResult())}
	if rj := p.GetRejection(); rj != nil {
		r.Rejected, r.Reason, r.Message, r.Detail, r.Retryable = true, rj.GetReason(), rj.GetMessage(), string(rj.GetDetail()), rj.GetRetryable()
	}
	return r
}

// lzNever is the return time of a call that got no answer: it may take
// effect at any point after its call.
const lzNever = math.MaxInt64
