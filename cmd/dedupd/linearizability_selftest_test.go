package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/dedupd/dedupd/server/store"
)

// These tests check the checker, so that TestLinearizable's zero violations
// mean something: histories written by hand, and histories produced by
// running the workload against store.Apply with deliberate bugs, must be
// refused, and right ones accepted.

func lzOperation(client int, in lzInput, call, ret int64, out lzOutput) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
}

func TestLinearizabilityCheckerCatchesViolations(t *testing.T) {
	pending1 := lzRecord{State: "PENDING", Token: 1, Attempts: 1, Digest: "A", Owner: "a"}
	pending1b := lzRecord{State: "PENDING", Token: 1, Attempts: 1, Digest: "A", Owner: "b"}
	done1 := lzRecord{State: "COMPLETED", Token: 1, Attempts: 1, Digest: "A", Owner: "a", Result: "r"}
	released1 := lzRecord{State: "RELEASED", Token: 1, Attempts: 1, Digest: "A", Owner: "a", Rejected: true, Reason: "R", Retryable: true}
	claimA := lzInput{op: lzClaim, key: "k", digest: "A", owner: "a"}
	claimB := lzInput{op: lzClaim, key: "k", digest: "A", owner: "b"}
	complete1 := lzInput{op: lzComplete, key: "k", token: 1, result: "r"}
	release1 := lzInput{op: lzReject, key: "k", token: 1, reason: "R", retryable: true}
	lookup := lzInput{op: lzLookup, key: "k"}
	ok := func(r lzRecord) lzOutput { return lzAnswer("", r) }
	acquired := func(r lzRecord) lzOutput { return lzAnswer("ACQUIRED", r) }
	op := lzOperation
	cases := []struct {
		name    string
		history []porcupine.Operation
		legal   bool
	}{
		{"two acquisitions of one free key", []porcupine.Operation{
			op(0, claimA, 0, 10, acquired(pending1)), op(1, claimB, 5, 15, acquired(pending1b))}, false},
		{"overlapping claims, one acquires", []porcupine.Operation{
			op(0, claimA, 0, 10, acquired(pending1)), op(1, claimB, 5, 15, lzAnswer("IN_PROGRESS", pending1))}, true},
		{"in progress before anyone acquired", []porcupine.Operation{
			op(1, claimB, 0, 4, lzAnswer("IN_PROGRESS", pending1)), op(0, claimA, 5, 10, acquired(pending1))}, false},
		{"completed result lost", []porcupine.Operation{
			op(0, claimA, 0, 1, acquired(pending1)), op(0, complete1, 2, 3, ok(done1)), op(1, lookup, 4, 5, ok(pending1))}, false},
		{"completed result read", []porcupine.Operation{
			op(0, claimA, 0, 1, acquired(pending1)), op(0, complete1, 2, 3, ok(done1)), op(1, lookup, 4, 5, ok(done1))}, true},
		{"unanswered claim that took effect", []porcupine.Operation{
			op(0, claimA, 0, lzNever, lzOutput{unknown: true}), op(1, lookup, 4, 5, ok(pending1))}, true},
		{"unanswered claim that did not", []porcupine.Operation{
			op(0, claimA, 0, lzNever, lzOutput{unknown: true}), op(1, lookup, 4, 5, lzOutput{reason: "RECORD_NOT_FOUND"})}, true},
		{"read of a record nobody wrote", []porcupine.Operation{op(1, lookup, 4, 5, ok(done1))}, false},
		{"lease lost although current", []porcupine.Operation{
			op(0, claimA, 0, 1, acquired(pending1)), op(0, complete1, 2, 3, lzRefusal("LEASE_LOST", pending1))}, false},
		{"takeover of a released key keeps the token", []porcupine.Operation{
			op(0, claimA, 0, 1, acquired(pending1)), op(0, release1, 2, 3, ok(released1)),
			op(1, claimB, 4, 5, acquired(lzRecord{State: "PENDING", Token: 1, Attempts: 2, Digest: "A", Owner: "b"}))}, false},
		{"takeover of a released key bumps the token", []porcupine.Operation{
			op(0, claimA, 0, 1, acquired(pending1)), op(0, release1, 2, 3, ok(released1)),
			op(1, claimB, 4, 5, acquired(lzRecord{State: "PENDING", Token: 2, Attempts: 2, Digest: "A", Owner: "b"}))}, true},
		{"stale token completes", []porcupine.Operation{
			op(0, claimA, 0, 1, acquired(pending1)), op(0, release1, 2, 3, ok(released1)),
			op(1, claimB, 4, 5, acquired(lzRecord{State: "PENDING", Token: 2, Attempts: 2, Digest: "A", Owner: "b"})),
			op(0, complete1, 6, 7, ok(lzRecord{State: "COMPLETED", Token: 2, Attempts: 2, Digest: "A", Owner: "b", Result: "r"}))}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(lzModel, c.history); got != c.legal {
				t.Fatalf("checker says linearizable = %v, want %v", got, c.legal)
			}
		})
	}
}

// In a run without injected faults, an answer sent as UNAVAILABLE (here a
// DIGEST_MISMATCH disguised as one) fails the check, although an unknown
// outcome fits the model.
func TestLinearizabilityCheckerRefusesUnansweredCallsWithoutFaults(t *testing.T) {
	history := []porcupine.Operation{
		lzOperation(0, lzInput{op: lzClaim, key: "k", digest: "A", owner: "a"}, 0, 1,
			lzAnswer("ACQUIRED", lzRecord{State: "PENDING", Token: 1, Attempts: 1, Digest: "A", Owner: "a"})),
		lzOperation(1, lzInput{op: lzClaim, key: "k", digest: "B", owner: "b"}, 2, lzNever,
			lzOutput{unknown: true, reason: "Unavailable"}),
	}
	if err := lzVerdict(history, true, ""); err != nil {
		t.Fatalf("with faults injected, an unanswered call is an unknown outcome: %v", err)
	}
	if err := lzVerdict(history, false, ""); err == nil {
		t.Fatal("without injected faults, an unanswered call passed the check")
	}
}

// applyFunc is store.Apply's signature, so that tests can break it.
type applyFunc func(stored *store.Record, cmd store.Command, now time.Time) (store.Decision, error)

// A history produced by running the workload against a broken Apply is
// refused; the same workload against store.Apply is accepted, which also
// shows that the independent model and Apply agree on it.
func TestLinearizabilityCheckerRefusesBrokenApply(t *testing.T) {
	var mutations int
	noTokenBumpOnTakeover := func(stored *store.Record, cmd store.Command, now time.Time) (store.Decision, error) {
		d, err := store.Apply(stored, cmd, now)
		if _, claim := cmd.(store.ClaimParams); claim && err == nil && d.Outcome == store.Acquired && stored != nil {
			d.Record.FencingToken = stored.FencingToken
			mutations++
		}
		return d, err
	}
	staleTokenCompletes := func(stored *store.Record, cmd store.Command, now time.Time) (store.Decision, error) {
		if c, ok := cmd.(store.CompleteParams); ok && stored != nil && stored.State == store.Pending && c.FencingToken != stored.FencingToken {
			c.FencingToken = stored.FencingToken
			cmd = c
			mutations++
		}
		return store.Apply(stored, cmd, now)
	}
	for _, tc := range []struct {
		name  string
		apply applyFunc
		legal bool
	}{
		{"store.Apply", store.Apply, true},
		{"no token bump on takeover", noTokenBumpOnTakeover, false},
		{"stale token completes", staleTokenCompletes, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mutations = 0
			history := lzSequentialHistory(tc.apply, 1, 600)
			err := lzVerdict(history, false, "")
			switch {
			case tc.legal && err != nil:
				t.Fatalf("history of the real Apply refused: %v", err)
			case !tc.legal && mutations == 0:
				t.Fatal("the workload never reached the broken path; the test proves nothing")
			case !tc.legal && err == nil:
				t.Fatalf("history of a broken Apply (%d mutated answers) accepted", mutations)
			}
		})
	}
}

// lzSequentialHistory runs the TestLinearizable workload's calls one after
// another against an in-memory store that decides with apply, and returns
// the history.
func lzSequentialHistory(apply applyFunc, seed uint64, ops int) []porcupine.Operation {
	records := map[string]*store.Record{}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	policy := store.Policy{DefaultLeaseTTL: time.Hour, CompletedTTL: 24 * time.Hour, RejectedTTL: 24 * time.Hour, ReleasedTTL: 24 * time.Hour}
	clients := make([]*lzClient, lzClients)
	for id := range clients {
		clients[id] = &lzClient{id: id, rng: rand.New(rand.NewPCG(seed, uint64(id))), tokens: map[string]int64{}}
	}
	history := make([]porcupine.Operation, 0, ops)
	for i := range ops {
		cl := clients[i%lzClients]
		in := cl.nextInput(i / (lzClients * lzOpsPerKeySet))
		now = now.Add(time.Millisecond)
		out := lzApplyCall(apply, records, in, policy, now)
		cl.observe(in, out)
		history = append(history, lzOperation(cl.id, in, int64(2*i), int64(2*i+1), out))
	}
	return history
}

// lzApplyCall is one call against the in-memory store.
func lzApplyCall(apply applyFunc, records map[string]*store.Record, in lzInput, p store.Policy, now time.Time) lzOutput {
	stored := records[in.key]
	if in.op == lzLookup {
		if stored == nil {
			return lzOutput{reason: "RECORD_NOT_FOUND"}
		}
		return lzAnswer("", lzRecordOf(*stored))
	}
	var cmd store.Command
	switch in.op {
	case lzClaim:
		cmd = store.ClaimParams{Consumer: "lz", Key: in.key, Digest: []byte(in.digest), Owner: in.owner, Policy: p}
	case lzComplete:
		cmd = store.CompleteParams{Consumer: "lz", Key: in.key, FencingToken: in.token, Result: []byte(in.result), Policy: p}
	case lzReject:
		cmd = store.RejectParams{Consumer: "lz", Key: in.key, FencingToken: in.token, Policy: p,
			Rejection: store.Rejection{Reason: in.reason, Retryable: in.retryable}}
	case lzExtend:
		cmd = store.ExtendLeaseParams{Consumer: "lz", Key: in.key, FencingToken: in.token, Policy: p}
	}
	d, err := apply(stored, cmd, now)
	if err != nil {
		if conflict, ok := errors.AsType[*store.ConflictError](err); ok {
			// As the server sends it: a payload over 1 KiB left out.
			return lzRefusal(lzReasonOf(err), lzRecordOf(conflict.Record))
		}
		return lzOutput{reason: lzReasonOf(err)}
	}
	if d.Write {
		rec := d.Record
		records[in.key] = &rec
	}
	out := lzAnswer("", lzRecordOf(d.Record))
	if in.op == lzClaim {
		out.outcome = d.Outcome.String()
	}
	return out
}

func lzReasonOf(err error) string {
	for sentinel, reason := range map[error]string{
		store.ErrDigestMismatch:  "DIGEST_MISMATCH",
		store.ErrLeaseLost:       "LEASE_LOST",
		store.ErrAlreadyFinished: "ALREADY_FINISHED",
		store.ErrNotFound:        "RECORD_NOT_FOUND",
	} {
		if errors.Is(err, sentinel) {
			return reason
		}
	}
	return fmt.Sprintf("unexpected: %v", err)
}

func lzRecordOf(r store.Record) lzRecord {
	out := lzRecord{State: string(r.State), Token: r.FencingToken, Attempts: r.Attempts, Digest: string(r.Digest),
		Owner: r.Owner, Result: string(r.Result)}
	if rj := r.Rejection; rj != nil {
		out.Rejected, out.Reason, out.Message, out.Detail, out.Retryable = true, rj.Reason, rj.Message, string(rj.Detail), rj.Retryable
	}
	return out
}
