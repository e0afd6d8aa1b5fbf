package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// Size of the linearizability workload. CI runs the default; set
// DEDUPD_LZ_OPS (calls per client) higher for a longer hunt, e.g.
// DEDUPD_LZ_OPS=1000 go test -run TestLinearizable ./cmd/dedupd.
const (
	lzClients      = 6
	lzKeys         = 3  // keys in play at once
	lzOpsPerKeySet = 15 // calls per client before the clients move on to new keys
	lzDefaultOps   = 100
	lzCallDeadline = 10 * time.Second
)

// TestLinearizable runs concurrent clients that make random calls on a few
// keys of a real dedupd, records when each call started and returned, and
// checks that the history is linearizable: that some order of the calls,
// each placed between its call and return, explains every answer by the
// record state machine (lzModel, written from the documented contract).
// Zero violations on both stores. No faults are injected, so every call
// must get an answer: an UNAVAILABLE, DEADLINE_EXCEEDED or CANCELED fails
// the test rather than passing as "outcome unknown".
func TestLinearizable(t *testing.T) {
	forEachBackend(t, func(t *testing.T, flags []string) {
		srv := startDedupd(t, append(flags, "--default-lease-ttl", "1h", "--completed-ttl", "24h",
			"--rejected-ttl", "24h", "--released-ttl", "24h")...)
		client := dedupv1.NewDedupServiceClient(srv.dial(t))
		seed := uint64(time.Now().UnixNano())
		t.Logf("workload seed %d", seed)
		history := runLzWorkload(client, seed, lzOpsPerClient(t))
		checkLinearizable(t, history, false)
		srv.stop(t)
	})
}

func lzOpsPerClient(t *testing.T) int {
	if s := os.Getenv("DEDUPD_LZ_OPS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("DEDUPD_LZ_OPS=%q: want a positive number", s)
		}
		return n
	}
	return lzDefaultOps
}

// checkLinearizable fails the test unless lzVerdict accepts the history.
func checkLinearizable(t *testing.T, history []porcupine.Operation, faultsInjected bool) {
	t.Helper()
	if err := lzVerdict(history, faultsInjected, os.TempDir()); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d calls are linearizable; answers: %v", len(history), answerCounts(history))
}

// lzVerdict returns nil if the history is linearizable, and else an error
// naming a visualization of the longest partial linearization, written in
// dir (none when dir is empty). Unless
// faults were injected, a call without an answer is an error by itself:
// a server that answered a refusal as UNAVAILABLE would otherwise pass,
// since an unknown outcome fits any history.
func lzVerdict(history []porcupine.Operation, faultsInjected bool, dir string) error {
	if !faultsInjected {
		var unanswered []string
		for _, op := range history {
			if out := op.Output.(lzOutput); out.unknown {
				unanswered = append(unanswered, lzModel.DescribeOperation(op.Input, out)+" ("+out.reason+")")
			}
		}
		if len(unanswered) > 0 {
			return fmt.Errorf("%d of %d calls got no answer although no fault was injected, e.g. %s",
				len(unanswered), len(history), unanswered[0])
		}
	}
	res, info := porcupine.CheckOperationsVerbose(lzModel, history, 2*time.Minute)
	switch res {
	case porcupine.Ok:
		return nil
	case porcupine.Unknown:
		return fmt.Errorf("the checker timed out on %d calls; shrink the workload", len(history))
	}
	if dir == "" {
		return fmt.Errorf("history of %d calls is NOT linearizable", len(history))
	}
	path := filepath.Join(dir, fmt.Sprintf("dedupd-linearizability-%d.html", time.Now().UnixNano()))
	if err := porcupine.VisualizePath(lzModel, info, path); err != nil {
		path = "(writing the visualization failed: " + err.Error() + ")"
	}
	return fmt.Errorf("history of %d calls is NOT linearizable; see %s", len(history), path)
}

// runLzWorkload runs the clients to completion and returns their history.
func runLzWorkload(c dedupv1.DedupServiceClient, seed uint64, opsPerClient int) []porcupine.Operation {
	start := time.Now()
	var mu sync.Mutex
	var history []porcupine.Operation
	var wg sync.WaitGroup
	for id := range lzClients {
		wg.Go(func() {
			cl := &lzClient{id: id, rng: rand.New(rand.NewPCG(seed, uint64(id))), tokens: map[string]int64{}}
			for i := 0; i < opsPerClient; {
				// Some calls are batches: each item is an operation of its
				// own, placed anywhere between the batch's call and return.
				ins := []lzInput{cl.nextInput(i / lzOpsPerKeySet)}
				if cl.rng.IntN(4) == 0 {
					ins = cl.nextBatch(ins[0], i/lzOpsPerKeySet)
				}
				callAt := time.Since(start).Nanoseconds()
				var outs []lzOutput
				if len(ins) == 1 {
					outs = []lzOutput{lzCall(c, ins[0])}
				} else {
					outs = lzBatchCall(c, ins)
				}
				returnAt := time.Since(start).Nanoseconds()
				mu.Lock()
				for j, out := range outs {
					cl.observe(ins[j], out)
					ret := returnAt
					if out.unknown {
						ret = lzNever
					}
					history = append(history, porcupine.Operation{ClientId: id, Input: ins[j], Call: callAt, Output: out, Return: ret})
				}
				mu.Unlock()
				i += len(ins)
			}
		})
	}
	wg.Wait()
	return history
}

// lzClient makes random calls, mostly with the fencing tokens it has seen
// so that writes often succeed, sometimes with stale or future ones.
type lzClient struct {
	id     int
	rng    *rand.Rand
	tokens map[string]int64 // the latest token seen per key
}

// nextInput picks a call on one of the keys of keySet: the clients move on
// to fresh keys together, since a key soon reaches a terminal state and
// then only replays.
func (cl *lzClient) nextInput(keySet int) lzInput {
	in := lzInput{key: fmt.Sprintf("key-%d-%d", keySet, cl.rng.IntN(lzKeys)), owner: fmt.Sprintf("client-%d", cl.id)}
	in.token = max(1, cl.tokens[in.key]+int64(cl.rng.IntN(4))-1) // mostly the known token
	if cl.rng.IntN(3) > 0 {
		in.token = max(1, cl.tokens[in.key])
	}
	switch p := cl.rng.IntN(100); {
	case p < 35:
		in.op, in.digest = lzClaim, "A"
		if cl.rng.IntN(10) == 0 {
			in.digest = "B"
		}
	case p < 55:
		in.op, in.result = lzComplete, fmt.Sprintf("r%d", cl.rng.IntN(2))
	case p < 67:
		in.op, in.reason, in.retryable = lzReject, fmt.Sprintf("R%d", cl.rng.IntN(2)), cl.rng.IntN(2) == 0
	case p < 77:
		in.op = lzExtend
	default:
		in.op = lzLookup
	}
	return in
}

// observe notes the fencing token an answer carries.
func (cl *lzClient) observe(in lzInput, out lzOutput) {
	if out.hasRecord {
		cl.tokens[in.key] = max(cl.tokens[in.key], out.record.Token)
	}
}

// lzCall makes the call and turns the answer into an lzOutput.
func lzCall(c dedupv1.DedupServiceClient, in lzInput) lzOutput {
	ctx, cancel := context.WithTimeout(context.Background(), lzCallDeadline)
	defer cancel()
	const consumer = "lz"
	var rec *dedupv1.Record
	var out lzOutput
	var err error
	switch in.op {
	case lzClaim:
		var r *dedupv1.ClaimResponse
		r, err = c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: consumer, Key: in.key, Digest: []byte(in.digest), Owner: in.owner})
		rec, out.outcome = r.GetRecord(), outcomeName(r.GetOutcome())
	case lzComplete:
		var r *dedupv1.CompleteResponse
		r, err = c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: consumer, Key: in.key, FencingToken: in.token, Result: []byte(in.result)})
		rec = r.GetRecord()
	case lzReject:
		var r *dedupv1.RejectResponse
		r, err = c.Reject(ctx, &dedupv1.RejectRequest{Consumer: consumer, Key: in.key, FencingToken: in.token, Reason: in.reason, Retryable: in.retryable})
		rec = r.GetRecord()
	case lzExtend:
		var r *dedupv1.ExtendLeaseResponse
		r, err = c.ExtendLease(ctx, &dedupv1.ExtendLeaseRequest{Consumer: consumer, Key: in.key, FencingToken: in.token})
		rec = r.GetRecord()
	case lzLookup:
		var r *dedupv1.LookupResponse
		r, err = c.Lookup(ctx, &dedupv1.LookupRequest{Consumer: consumer, Key: in.key})
		rec = r.GetRecord()
	}
	return answerOutput(rec, out, err)
}

// answerOutput completes out with an answer: the record, or the error and
// the stored record it carries.
func answerOutput(rec *dedupv1.Record, out lzOutput, err error) lzOutput {
	if err != nil {
		out = errorOutput(err)
		if out.unknown {
			return out
		}
		rec = conflictRecord(err)
	}
	if rec != nil {
		out.hasRecord, out.record = true, lzRecordFromProto(rec)
	}
	return out
}

// errorOutput: UNAVAILABLE, deadline and cancellation leave the call's
// effect unknown; any other error must carry its ErrorInfo reason.
func errorOutput(err error) lzOutput {
	st := status.Convert(err)
	switch st.Code() {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		return lzOutput{unknown: true, reason: st.Code().String() + ": " + st.Message()}
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return lzOutput{reason: info.GetReason()}
		}
	}
	return lzOutput{reason: "no ErrorInfo: " + err.Error()}
}

// conflictRecord is the stored record a refusal carries, if any.
func conflictRecord(err error) *dedupv1.Record {
	for _, d := range status.Convert(err).Details() {
		if r, ok := d.(*dedupv1.Record); ok {
			return r
		}
	}
	return nil
}

func outcomeName(o dedupv1.Outcome) string {
	return map[dedupv1.Outcome]string{
		dedupv1.Outcome_OUTCOME_ACQUIRED:    "ACQUIRED",
		dedupv1.Outcome_OUTCOME_IN_PROGRESS: "IN_PROGRESS",
		dedupv1.Outcome_OUTCOME_COMPLETED:   "COMPLETED",
		dedupv1.Outcome_OUTCOME_REJECTED:    "REJECTED",
	}[o]
}

// answerCounts tallies the answers of a history, to show in the log that
// the workload exercised every path.
func answerCounts(history []porcupine.Operation) map[string]int {
	counts := map[string]int{}
	for _, op := range history {
		out := op.Output.(lzOutput)
		answer := out.outcome + out.reason
		if answer == "" {
			answer = "OK"
		}
		counts[lzOpNames[op.Input.(lzInput).op]+":"+answer]++
	}
	return counts
}
