package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// The stream model for the linearizability check, written from the rules
// of docs/api.md and the table rather than from store.ApplyStream,
// so that a mistake in that function shows as a violation here. Leases
// are an hour long, so nothing expires during a test; streams are dense.

type lsOp int

const (
	lsClaim lsOp = iota
	lsComplete
	lsReject
	lsRelease
	lsGet
)

var lsOpNames = [...]string{"ClaimStream", "CompleteStream", "RejectStream", "ReleaseStream", "GetStream"}

type lsInput struct {
	op     lsOp
	stream string
	seq    int64
	token  int64
}

// lsOutput is one answer without timestamps and owners.
type lsOutput struct {
	unknown  bool
	reason   string
	outcome  string
	expected int64  // SEQUENCE_GAP's expected_sequence
	stream   string // the returned stream (successes only), as lsSummary gives it
}

// lsState is the model's stream.
type lsState struct {
	present           bool
	mark, inFlight    int64
	token, finishedBy int64
	lastOutcome       string
}

func (s lsState) summary() string {
	return lsSummary(s.mark, s.inFlight, s.token, s.lastOutcome)
}

func lsSummary(mark, inFlight, token int64, last string) string {
	return fmt.Sprintf("mark=%d in=%d tok=%d last=%s", mark, inFlight, token, last)
}

// lsStep is the model: the answer a call must get in state s, and the
// state after it.
func lsStep(s lsState, in lsInput) (lsOutput, lsState) {
	ok := func(next lsState, outcome string) (lsOutput, lsState) {
		return lsOutput{outcome: outcome, stream: next.summary()}, next
	}
	refuse := func(reason string) (lsOutput, lsState) { return lsOutput{reason: reason}, s }
	switch in.op {
	case lsGet:
		if !s.present {
			return refuse("STREAM_NOT_FOUND")
		}
		return ok(s, "")
	case lsClaim:
		switch {
		case !s.present && in.seq != 1:
			return lsOutput{reason: "SEQUENCE_GAP", expected: 1}, s
		case !s.present:
			return ok(lsState{present: true, inFlight: 1, token: 1}, "ACQUIRED")
		case in.seq <= s.mark:
			return ok(s, "DUPLICATE")
		case s.inFlight != 0:
			return ok(s, "IN_PROGRESS")
		case in.seq != s.mark+1:
			return lsOutput{reason: "SEQUENCE_GAP", expected: s.mark + 1}, s
		}
		next := s
		next.inFlight, next.token = in.seq, s.token+1
		return ok(next, "ACQUIRED")
	}
	// The finishing calls.
	finishedByCaller := s.present && s.finishedBy == in.token && s.mark == in.seq && in.token != 0
	holds := s.present && s.inFlight != 0 && s.inFlight == in.seq && s.token == in.token
	if in.op == lsRelease {
		switch {
		case finishedByCaller:
			return refuse("ALREADY_FINISHED")
		case s.present && s.inFlight == 0 && s.token == in.token && s.finishedBy != in.token && in.seq > s.mark:
			return ok(s, "") // released already
		case !holds:
			return refuse("LEASE_LOST")
		}
		next := s
		next.inFlight = 0
		return ok(next, "")
	}
	outcome := map[lsOp]string{lsComplete: "COMPLETED", lsReject: "REJECTED"}[in.op]
	switch {
	case finishedByCaller && s.lastOutcome == outcome:
		return ok(s, "") // the same finish again
	case finishedByCaller:
		return refuse("ALREADY_FINISHED")
	case !holds:
		return refuse("LEASE_LOST")
	}
	next := s
	next.mark, next.inFlight, next.finishedBy, next.lastOutcome = in.seq, 0, in.token, outcome
	return ok(next, "")
}

var lsModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var names []string
		for _, op := range history {
			n := op.Input.(lsInput).stream
			if _, seen := by[n]; !seen {
				names = append(names, n)
			}
			by[n] = append(by[n], op)
		}
		parts := make([][]porcupine.Operation, 0, len(names))
		for _, n := range names {
			parts = append(parts, by[n])
		}
		return parts
	},
	Init: func() any { return lsState{} },
	Step: func(state, input, output any) (bool, any) {
		want, next := lsStep(state.(lsState), input.(lsInput))
		out := output.(lsOutput)
		return out.unknown || out == want, next
	},
	Equal: func(a, b any) bool { return a.(lsState) == b.(lsState) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(lsInput), output.(lsOutput)
		return fmt.Sprintf("%s(%s #%d tok=%d) -> %+v", lsOpNames[in.op], in.stream, in.seq, in.token, out)
	},
	DescribeState: func(state any) string { return state.(lsState).summary() },
}

// TestLinearizableStreams runs concurrent clients making random stream
// calls against a real dedupd and checks the history against lsModel.
func TestLinearizableStreams(t *testing.T) {
	forEachBackend(t, func(t *testing.T, flags []string) {
		srv := startDedupd(t, append(flags, "--default-lease-ttl", "1h")...)
		c := dedupv1.NewStreamServiceClient(srv.dial(t))
		seed := uint64(time.Now().UnixNano())
		t.Logf("workload seed %d", seed)
		history := runLsWorkload(c, seed, lzOpsPerClient(t))
		res, _ := porcupine.CheckOperationsVerbose(lsModel, history, 2*time.Minute)
		if res != porcupine.Ok {
			t.Fatalf("stream history of %d calls: %v", len(history), res)
		}
		t.Logf("%d stream calls are linearizable", len(history))
		srv.stop(t)
	})
}

func runLsWorkload(c dedupv1.StreamServiceClient, seed uint64, opsPerClient int) []porcupine.Operation {
	start := time.Now()
	var (
		mu      sync.Mutex
		history []porcupine.Operation
		wg      sync.WaitGroup
	)
	for id := range lzClients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(id)))
			seen := map[string]lsState{} // the latest stream this client saw
			for i := range opsPerClient {
				name := fmt.Sprintf("s-%d-%d", i/lzOpsPerKeySet, rng.IntN(lzKeys))
				in := lsNextInput(rng, name, seen[name])
				callAt := time.Since(start).Nanoseconds()
				out, st := lsDo(c, in)
				returnAt := time.Since(start).Nanoseconds()
				if out.unknown {
					returnAt = lzNever
				}
				if st != nil {
					seen[name] = lsState{mark: st.GetHighWater(), inFlight: st.GetInFlight(), token: st.GetFencingToken()}
				}
				mu.Lock()
				history = append(history, porcupine.Operation{ClientId: id, Input: in, Call: callAt, Output: out, Return: returnAt})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return history
}

// lsNextInput picks a call, mostly with the sequence and token the client
// last saw, sometimes off by one either way.
func lsNextInput(rng *rand.Rand, name string, seen lsState) lsInput {
	in := lsInput{stream: name, seq: max(1, seen.mark+1), token: max(1, seen.token)}
	if seen.inFlight != 0 {
		in.seq = seen.inFlight
	}
	if rng.IntN(4) == 0 {
		in.seq = max(1, in.seq+int64(rng.IntN(3))-1)
	}
	if rng.IntN(5) == 0 {
		in.token = max(1, in.token+int64(rng.IntN(3))-1)
	}
	switch p := rng.IntN(100); {
	case p < 40:
		in.op = lsClaim
	case p < 65:
		in.op = lsComplete
	case p < 72:
		in.op = lsReject
	case p < 82:
		in.op = lsRelease
	default:
		in.op = lsGet
	}
	return in
}

func lsDo(c dedupv1.StreamServiceClient, in lsInput) (lsOutput, *dedupv1.Stream) {
	ctx, cancel := context.WithTimeout(context.Background(), lzCallDeadline)
	defer cancel()
	const consumer = "ls"
	var (
		st  *dedupv1.Stream
		out lsOutput
		err error
	)
	switch in.op {
	case lsClaim:
		var r *dedupv1.ClaimStreamResponse
		r, err = c.ClaimStream(ctx, &dedupv1.ClaimStreamRequest{Consumer: consumer, Stream: in.stream, Sequence: in.seq, Owner: "o"})
		st, out.outcome = r.GetStream(), map[dedupv1.StreamOutcome]string{
			dedupv1.StreamOutcome_STREAM_OUTCOME_ACQUIRED:    "ACQUIRED",
			dedupv1.StreamOutcome_STREAM_OUTCOME_IN_PROGRESS: "IN_PROGRESS",
			dedupv1.StreamOutcome_STREAM_OUTCOME_DUPLICATE:   "DUPLICATE",
		}[r.GetOutcome()]
	case lsComplete:
		var r *dedupv1.CompleteStreamResponse
		r, err = c.CompleteStream(ctx, &dedupv1.CompleteStreamRequest{Consumer: consumer, Stream: in.stream, Sequence: in.seq, FencingToken: in.token})
		st = r.GetStream()
	case lsReject:
		var r *dedupv1.RejectStreamResponse
		r, err = c.RejectStream(ctx, &dedupv1.RejectStreamRequest{Consumer: consumer, Stream: in.stream, Sequence: in.seq, FencingToken: in.token, Reason: "R"})
		st = r.GetStream()
	case lsRelease:
		var r *dedupv1.ReleaseStreamResponse
		r, err = c.ReleaseStream(ctx, &dedupv1.ReleaseStreamRequest{Consumer: consumer, Stream: in.stream, Sequence: in.seq, FencingToken: in.token})
		st = r.GetStream()
	case lsGet:
		var r *dedupv1.GetStreamResponse
		r, err = c.GetStream(ctx, &dedupv1.GetStreamRequest{Consumer: consumer, Stream: in.stream})
		st = r.GetStream()
	}
	if err != nil {
		e := errorOutput(err)
		if e.unknown {
			return lsOutput{unknown: true}, nil
		}
		out = lsOutput{reason: e.reason}
		for _, d := range status.Convert(err).Details() {
			switch d := d.(type) {
			case *errdetails.ErrorInfo:
				if v := d.GetMetadata()["expected_sequence"]; v != "" {
					out.expected, _ = strconv.ParseInt(v, 10, 64)
				}
			case *dedupv1.Stream:
				st = d
			}
		}
		return out, st
	}
	last := map[dedupv1.State]string{dedupv1.State_STATE_COMPLETED: "COMPLETED", dedupv1.State_STATE_REJECTED: "REJECTED"}[st.GetLastOutcome()]
	out.stream = lsSummary(st.GetHighWater(), st.GetInFlight(), st.GetFencingToken(), last)
	return out, st
}

// TestStreamCheckerCatchesViolations: hand-written histories, wrong ones
// refused, so that TestLinearizableStreams' pass means something.
func TestStreamCheckerCatchesViolations(t *testing.T) {
	acq := func(mark, in, tok int64) lsOutput {
		return lsOutput{outcome: "ACQUIRED", stream: lsSummary(mark, in, tok, "")}
	}
	claim := func(seq int64) lsInput { return lsInput{op: lsClaim, stream: "s", seq: seq} }
	complete1 := lsInput{op: lsComplete, stream: "s", seq: 1, token: 1}
	done1 := lsOutput{stream: lsSummary(1, 0, 1, "COMPLETED")}
	op := func(client int, in lsInput, call, ret int64, out lsOutput) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
	}
	for _, c := range []struct {
		name    string
		history []porcupine.Operation
		legal   bool
	}{
		{"two acquire one sequence", []porcupine.Operation{op(0, claim(1), 0, 10, acq(0, 1, 1)), op(1, claim(1), 5, 15, acq(0, 1, 1))}, false},
		{"one acquires, one waits", []porcupine.Operation{op(0, claim(1), 0, 10, acq(0, 1, 1)),
			op(1, claim(1), 5, 15, lsOutput{outcome: "IN_PROGRESS", stream: lsSummary(0, 1, 1, "")})}, true},
		{"a gap acquired", []porcupine.Operation{op(0, claim(2), 0, 10, acq(0, 2, 1))}, false},
		{"a gap refused", []porcupine.Operation{op(0, claim(2), 0, 10, lsOutput{reason: "SEQUENCE_GAP", expected: 1})}, true},
		{"a duplicate acquired again", []porcupine.Operation{op(0, claim(1), 0, 1, acq(0, 1, 1)), op(0, complete1, 2, 3, done1),
			op(1, claim(1), 4, 5, acq(1, 1, 2))}, false},
		{"the mark moves back", []porcupine.Operation{op(0, claim(1), 0, 1, acq(0, 1, 1)), op(0, complete1, 2, 3, done1),
			op(1, lsInput{op: lsGet, stream: "s"}, 4, 5, lsOutput{stream: lsSummary(0, 1, 1, "")})}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(lsModel, c.history); got != c.legal {
				t.Fatalf("linearizable = %v, want %v", got, c.legal)
			}
		})
	}
}
