package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/rpcerrors"
)

const (
	overloadCallers     = 2000
	overloadMaxInFlight = 8
	overloadConns       = 4
	// overloadHang is how long a call may take before the test calls it
	// hung. It judges nothing else: a loaded machine may take seconds per
	// call, and the answers, not the time, are what the test checks.
	overloadHang = 2 * time.Minute
	// overloadAttempts bounds the retries of a shed Complete.
	overloadAttempts    = 50
	overloadResultBytes = 16 << 10
	// overloadRSSGrowth bounds the server's peak memory above its size
	// before the burst. All callers' results together are about 31 MiB;
	// the bound is generous, it catches unbounded queueing, not waste.
	overloadRSSGrowth = 256 << 20
)

// TestOverloadIsShed sends a burst of 2,000 concurrent callers, each
// claiming a key and completing it with a 16 KiB result, at a server that
// runs at most 8 calls at once. It judges by the answers, never by how long
// they took (a loaded machine may be slow at anything): every call is
// answered OK, or shed with RESOURCE_EXHAUSTED / OVERLOADED or
// UNAVAILABLE, nothing else; a call that is not answered at all within
// overloadHang has hung. Something is shed, something acknowledged; shed
// Completes are retried (a bounded number of times), and every
// acknowledged one must be stored. The server's peak memory stays bounded,
// and it serves normally afterwards.
func TestOverloadIsShed(t *testing.T) {
	srv := startDedupd(t, "--data-dir", t.TempDir(), "--max-inflight", strconv.Itoa(overloadMaxInFlight))
	var clients []dedupv1.DedupServiceClient
	for range overloadConns {
		clients = append(clients, dedupv1.NewDedupServiceClient(srv.dial(t)))
	}
	claim(t, clients[0], "overload-warmup", nil, 0)
	rssBefore := procStatusBytes(t, srv.Cmd.Process.Pid, "VmRSS")

	burst := &overloadBurst{acked: map[string][]byte{}, codes: map[string]int{}}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range overloadCallers {
		wg.Go(func() {
			<-start
			burst.caller(clients[i%overloadConns], fmt.Sprintf("overload-%d", i))
		})
	}
	close(start)
	wg.Wait()
	peak := procStatusBytes(t, srv.Cmd.Process.Pid, "VmHWM")

	t.Logf("answers: %v; %d Completes acknowledged; RSS %d MiB before, peak %d MiB", burst.codes,
		len(burst.acked), rssBefore>>20, peak>>20)
	if len(burst.bad) > 0 {
		t.Errorf("%d calls broke the overload promise, first: %s", len(burst.bad), strings.Join(burst.bad[:min(10, len(burst.bad))], "\n"))
	}
	if burst.codes["Claim:ResourceExhausted"]+burst.codes["Claim:Unavailable"] == 0 {
		t.Fatalf("nothing was shed (%v); the burst did not overload the server and the test proves nothing", burst.codes)
	}
	if len(burst.acked) == 0 {
		t.Fatal("no Complete was acknowledged: the server shed everything")
	}
	if peak > rssBefore+overloadRSSGrowth {
		t.Errorf("peak RSS %d MiB, more than %d MiB above the %d MiB before the burst", peak>>20, overloadRSSGrowth>>20, rssBefore>>20)
	}
	for key, want := range burst.acked {
		got, err := clients[0].Lookup(context.Background(), &dedupv1.LookupRequest{Consumer: consumer, Key: key})
		if err != nil || got.GetRecord().GetState() != dedupv1.State_STATE_COMPLETED || !bytes.Equal(got.GetRecord().GetResult(), want) {
			t.Fatalf("acknowledged Complete of %s not stored: %v, %v", key, got.GetRecord().GetState(), err)
		}
	}
	claim(t, clients[0], "overload-after", nil, 0)
	srv.stop(t)
}

// overloadBurst is what the burst's callers saw.
type overloadBurst struct {
	mu    sync.Mutex
	acked map[string][]byte
	codes map[string]int // "Call:Code" -> count
	bad   []string
}

// caller claims key and completes it, retrying a shed Complete (a shed
// call did nothing, so retrying is safe) until its budget runs out.
func (b *overloadBurst) caller(c dedupv1.DedupServiceClient, key string) {
	var got *dedupv1.ClaimResponse
	err := b.call("Claim", func(ctx context.Context) (err error) {
		got, err = c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: consumer, Key: key})
		return err
	})
	if err != nil {
		return
	}
	result := bytes.Repeat([]byte(key[len(key)-1:]), overloadResultBytes)
	for attempt := 1; attempt <= overloadAttempts; attempt++ {
		err := b.call("Complete", func(ctx context.Context) error {
			_, err := c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: consumer, Key: key, FencingToken: got.GetFencingToken(), Result: result})
			return err
		})
		if err == nil {
			b.mu.Lock()
			b.acked[key] = result
			b.mu.Unlock()
			return
		}
		time.Sleep(time.Duration(min(attempt, 10)) * 5 * time.Millisecond) // backing off, as a client would
	}
}

// call makes one call and checks its answer.
func (b *overloadBurst) call(name string, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), overloadHang)
	defer cancel()
	err := f(ctx)
	code := status.Code(err)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.codes[name+":"+code.String()]++
	switch code {
	case codes.OK, codes.Unavailable:
	case codes.ResourceExhausted:
		if reason := errorReason(err); reason != rpcerrors.ReasonOverloaded {
			b.bad = append(b.bad, fmt.Sprintf("%s shed with reason %q, want OVERLOADED: %v", name, reason, err))
		}
	default:
		b.bad = append(b.bad, fmt.Sprintf("%s failed with %v: %v", name, code, err))
	}
	return err
}

func errorReason(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

// procStatusBytes reads a size field (VmRSS, VmHWM) of /proc/<pid>/status.
func procStatusBytes(t *testing.T, pid int, field string) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("reading the server's memory: %v", err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if value, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
