package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/dedupd/dedupd/internal/testing/grpctest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// The server the memory test runs, and the figures of the bound that
// docs/operations.md states for it ("Memory that callers cannot exceed").
const (
	memStalled     = 12             // connections that never read
	memConns       = memStalled + 1 // --max-connections C: and one that reads
	memPageBytes   = 1 << 20        // --max-page-bytes R
	memReplyBudget = 64 << 20       // --max-reply-bytes-in-flight B: a connection's share is 4 MiB
	memResultBytes = 100 << 10
	memRecords     = 100 // 10 MB of results
	memStreamCount = 300
	// The largest reply any method gives: a batch (api.MaxReplyBytes).
	memLargest = 4 << 20
	// The documented bound: every reply counts against B from before it
	// is built (a batch or a page reserves the largest reply up front) or
	// from the moment it is built (a single record), so what callers pin is
	// B plus the replies being built at one instant beyond their
	// reservations (small: a record or two per call running); the garbage
	// collector lets the heap grow to twice what is live (GOGC=100) before
	// it collects; 64 MiB covers the rest.
	memBound = 2*memReplyBudget + 64<<20
)

// memRuns are the --max-inflight I and --max-concurrent-streams S the
// test runs at: the bound must not depend on I. At the default I (1024),
// with S = 25, every stalled connection's calls run at once, and their
// replies are built together; at I = 2 (S = 2, so that the in-flight bound
// refuses none) they run two at a time.
var memRuns = []struct{ inflight, streams int }{{1024, 25}, {2, 2}}

// TestUnreadRepliesAreBounded is the acceptance test of issue 19, item 2
// (and issue 11, item 1): callers that never read the replies of any
// method that can answer with more than 64 KiB pin no more server memory
// than docs/operations.md says, measured as the resident set of a real
// dedupd (/proc/PID/status), not as a time. They speak raw HTTP/2 and
// never read their socket, which is what pins a reply: grpc-go holds each
// encoded reply whole until the client takes it, and the stream counts
// against --max-concurrent-streams until then. For each method, callers on
// memStalled connections fill every stream, one connection at a time (its
// calls answered, or refused, before the next).
func TestUnreadRepliesAreBounded(t *testing.T) {
	for _, run := range memRuns {
		t.Run(fmt.Sprintf("max-inflight=%d", run.inflight), func(t *testing.T) { unreadRepliesAreBounded(t, run.inflight, run.streams) })
	}
}

// unreadRepliesAreBounded runs the test with --max-inflight inflight and
// --max-concurrent-streams streamsPerConn.
func unreadRepliesAreBounded(t *testing.T, inflight, streamsPerConn int) {
	p := startDedupd(t, "--data-dir", t.TempDir(), "--embedded-engine", "pebble", "--replay-cache-bytes", "0",
		"--metrics-listen", "127.0.0.1:0",
		"--max-connections", strconv.Itoa(memConns), "--max-concurrent-streams", strconv.Itoa(streamsPerConn),
		"--max-inflight", strconv.Itoa(inflight), "--max-page-bytes", strconv.Itoa(memPageBytes),
		"--max-result-bytes", strconv.Itoa(2*memResultBytes),
		"--max-reply-bytes-in-flight", strconv.Itoa(memReplyBudget))
	conn, err := grpc.NewClient(p.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := dedupv1.NewDedupServiceClient(conn)
	calls := fillForMemory(t, conn, min(inflight, 8))

	for _, call := range calls {
		collectGarbage(t, p)
		before := residentBytes(t, p.Cmd.Process.Pid)
		stalled := make([]*grpctest.StallingCaller, memStalled)
		handled := handledCalls(t, p)
		for i := range stalled {
			stalled[i] = grpctest.DialStalling(t, p.Addr)
			stalled[i].Send(methodPath(call.method), call.request, streamsPerConn)
			handled += streamsPerConn
			waitHandled(t, p, handled)
		}
		grown := residentBytes(t, p.Cmd.Process.Pid) - before
		t.Logf("I=%d %s (reply %d KiB), %d unread calls: resident set %d -> %d MiB (%+d MiB); documented bound %d MiB",
			inflight, call.method, call.replyBytes>>10, memStalled*streamsPerConn, before>>20, (before+grown)>>20, grown>>20, memBound>>20)
		if grown > memBound {
			t.Errorf("unread %s replies grew the resident set by %d MiB, over the documented bound of %d MiB", call.method, grown>>20, memBound>>20)
		}
		// A caller that reads is still answered beside them: they hold
		// their connections' shares of the budget, not all of it.
		if _, err := c.LookupBatch(context.Background(), call.lookupBatch); err != nil {
			t.Errorf("a caller that reads was refused while %d connections do not read: %v", memStalled, err)
		}
		for _, s := range stalled {
			s.Close()
		}
		left := residentBytes(t, p.Cmd.Process.Pid)
		collectGarbage(t, p)
		t.Logf("  after the callers left: %+d MiB; after a collection: %+d MiB", (left-before)>>20, (residentBytes(t, p.Cmd.Process.Pid)-before)>>20)
	}
	// The bytes of the callers that left came back when their connections
	// ended: the budget again takes as many of the largest replies as it
	// holds (one at a time).
	for i := range memReplyBudget / memLargest {
		if _, err := c.LookupBatch(context.Background(), calls[0].lookupBatch); err != nil {
			t.Fatalf("after every caller that did not read left, large reply %d was refused: %v", i, err)
		}
	}
}

// memoryCall is one method's call whose reply is larger than 64 KiB.
type memoryCall struct {
	method      string
	request     []byte
	replyBytes  int
	lookupBatch *dedupv1.LookupBatchRequest
}

// fillForMemory stores records of memResultBytes and streams with long
// names, and returns one call of each method that can answer with more
// than 64 KiB, each checked to do so through a caller that reads.
func fillForMemory(t *testing.T, conn *grpc.ClientConn, inflight int) []memoryCall {
	t.Helper()
	ctx := context.Background()
	c := dedupv1.NewDedupServiceClient(conn)
	streams := dedupv1.NewStreamServiceClient(conn)
	result := bytes.Repeat([]byte{'r'}, memResultBytes)
	keys := make([]string, memRecords)
	var wg sync.WaitGroup
	for w := range inflight {
		wg.Go(func() {
			for i := w; i < memRecords; i += inflight {
				keys[i] = fmt.Sprintf("k%04d", i)
				got, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: consumer, Key: keys[i]})
				if err == nil {
					_, err = c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: consumer, Key: keys[i], FencingToken: got.GetFencingToken(), Result: result})
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
			for i := w; i < memStreamCount; i += inflight {
				name := fmt.Sprintf("%0512d", i)
				if _, err := streams.ClaimStream(ctx, &dedupv1.ClaimStreamRequest{Consumer: consumer, Stream: name, Sequence: 1, Owner: "o"}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	claimItems := make([]*dedupv1.ClaimBatchItem, len(keys))
	finishItems := make([]*dedupv1.FinishBatchItem, len(keys))
	for i, k := range keys {
		claimItems[i] = &dedupv1.ClaimBatchItem{Key: k}
		// Each is refused with the stored record, result and all; the
		// request stays small (a stalling caller sends it in one frame).
		finishItems[i] = &dedupv1.FinishBatchItem{Key: k, FencingToken: 1, Outcome: &dedupv1.FinishBatchItem_Result{Result: []byte("x")}}
	}
	lookupBatch := &dedupv1.LookupBatchRequest{Consumer: consumer, Keys: keys}
	type sample struct {
		method string
		req    proto.Message
		call   func() (proto.Message, error)
	}
	lookup := &dedupv1.LookupRequest{Consumer: consumer, Key: keys[0]}
	claim := &dedupv1.ClaimRequest{Consumer: consumer, Key: keys[0]}
	list := &dedupv1.ListRecordsRequest{Consumer: consumer, PageSize: 1000}
	claimBatch := &dedupv1.ClaimBatchRequest{Consumer: consumer, Items: claimItems}
	finishBatch := &dedupv1.FinishBatchRequest{Consumer: consumer, Items: finishItems}
	listStreams := &dedupv1.ListStreamsRequest{Consumer: consumer, PageSize: 1000}
	samples := []sample{
		{"Lookup", lookup, func() (proto.Message, error) { return c.Lookup(ctx, lookup) }},
		{"Claim", claim, func() (proto.Message, error) { return c.Claim(ctx, claim) }},
		{"ListRecords", list, func() (proto.Message, error) { return c.ListRecords(ctx, list) }},
		{"LookupBatch", lookupBatch, func() (proto.Message, error) { return c.LookupBatch(ctx, lookupBatch) }},
		{"ClaimBatch", claimBatch, func() (proto.Message, error) { return c.ClaimBatch(ctx, claimBatch) }},
		{"FinishBatch", finishBatch, func() (proto.Message, error) { return c.FinishBatch(ctx, finishBatch) }},
		{"StreamService/ListStreams", listStreams, func() (proto.Message, error) { return streams.ListStreams(ctx, listStreams) }},
	}
	calls := make([]memoryCall, len(samples))
	for i, s := range samples {
		resp, err := s.call()
		if err != nil {
			t.Fatalf("%s: %v", s.method, err)
		}
		if n := proto.Size(resp); n <= 64<<10 {
			t.Fatalf("%s answers with %d bytes, not more than 64 KiB: the fixture does not test it", s.method, n)
		}
		request, err := proto.Marshal(s.req)
		if err != nil {
			t.Fatal(err)
		}
		calls[i] = memoryCall{method: s.method, request: request, replyBytes: proto.Size(resp), lookupBatch: lookupBatch}
	}
	return calls
}

// residentBytes is VmRSS of a process, from /proc.
func residentBytes(t *testing.T, pid int) int {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				t.Fatalf("VmRSS line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc status")
	return 0
}

// waitHandled waits until the server has answered n calls in all. It
// polls closely: the test sends hundreds of calls one after another.
func waitHandled(t *testing.T, p *process, n int) {
	t.Helper()
	for range 60_000 { // a minute at the least: a loaded machine is slow, not wrong
		if handledCalls(t, p) >= n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("the server never answered %d calls", n)
}

// handledCalls is how many calls the server has answered, whatever the
// method and code.
func handledCalls(t *testing.T, p *process) int {
	t.Helper()
	families := opsScrape(t, p.opsMetricsAddr(t))
	total := 0.0
	for _, m := range families["grpc_server_handled_total"].GetMetric() {
		total += m.GetCounter().GetValue()
	}
	return int(total)
}

// collectGarbage has the server run a collection (pprof's heap profile
// with gc=1).
func collectGarbage(t *testing.T, p *process) {
	t.Helper()
	resp, err := http.Get("http://" + p.opsMetricsAddr(t) + "/debug/pprof/heap?gc=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// methodPath is the HTTP/2 path of a DedupService method, or of another
// service's ("Service/Method").
func methodPath(method string) string {
	if service, name, ok := strings.Cut(method, "/"); ok {
		return "/dedup.v1." + service + "/" + name
	}
	return "/dedup.v1.DedupService/" + method
}
