package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// The crash workload: workers claim random keys of a small set with short
// leases, and complete most of what they acquire; the rest they abandon, so
// that later claims take the key over once the lease has run out.
const (
	crashKeys        = 200
	crashWorkers     = 8
	crashLease       = 400 * time.Millisecond
	crashAcksBefore  = 40                      // acknowledged Completes before the kill
	crashAfterWindow = 1500 * time.Millisecond // load after the restart: several leases long
)

// TestCrashKeepsAcknowledgedOutcomes kills dedupd with SIGKILL in the
// middle of claim/complete load, restarts it on the same data, runs more
// load, and then checks the promises a crash must not break:
//   - every Complete that returned OK is stored, with its bytes and token;
//   - no two callers ever held overlapping valid leases on one key: the
//     acquisitions of a key have distinct tokens, each begins after the
//     previous lease ended, and none follows an acknowledged Complete;
//   - every key is in a valid state: pending, or completed by the holder
//     of its current token.
func TestCrashKeepsAcknowledgedOutcomes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, flags []string) {
		if !slices.Contains(flags, "--database-url") {
			flags = append(flags, "--embedded-sync", "full")
		}
		log := &crashLog{acks: map[string]ackedComplete{}, acquisitions: map[string][]acquisition{}}

		srv := startDedupd(t, flags...)
		ctx, stop := context.WithCancel(context.Background())
		done := runCrashLoad(ctx, dedupv1.NewDedupServiceClient(srv.dial(t)), log, 1)
		log.waitForAcks(t, crashAcksBefore)
		if err := srv.Cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-srv.Exited
		stop()
		done.Wait()
		t.Logf("killed dedupd after %d acknowledged Completes", log.ackCount())

		srv = startDedupd(t, flags...)
		c := dedupv1.NewDedupServiceClient(srv.dial(t))
		ctx, stop = context.WithTimeout(context.Background(), crashAfterWindow)
		runCrashLoad(ctx, c, log, 2).Wait()
		stop()

		log.check(t, c)
		srv.stop(t)
	})
}

// ackedComplete is a Complete the server acknowledged.
type ackedComplete struct {
	token  int64
	result []byte
}

// acquisition is an ACQUIRED answer: the token and the lease it granted,
// on the server's clock.
type acquisition struct {
	token      int64
	start, end time.Time
}

// crashLog is what the callers were told.
type crashLog struct {
	mu           sync.Mutex
	acks         map[string]ackedComplete
	acquisitions map[string][]acquisition
	unexpected   []string
}

func (l *crashLog) ackCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acks)
}

func (l *crashLog) waitForAcks(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for l.ackCount() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d Completes acknowledged in 30s; the load is not running", l.ackCount())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runCrashLoad starts the workers; they run until ctx is done.
func runCrashLoad(ctx context.Context, c dedupv1.DedupServiceClient, log *crashLog, phase uint64) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := range crashWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(phase, uint64(w)))
			for ctx.Err() == nil {
				if !log.cycle(c, fmt.Sprintf("crash-%d", rng.IntN(crashKeys)), rng.IntN(4) == 0) {
					time.Sleep(10 * time.Millisecond) // the server is down; don't spin
				}
			}
		}()
	}
	return &wg
}

// cycle claims key and, unless told to abandon it, completes it with a
// result that names the token. It returns false when the server did not
// answer.
func (l *crashLog) cycle(c dedupv1.DedupServiceClient, key string, abandon bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: consumer, Key: key, LeaseTtl: durationpb.New(crashLease)})
	if err != nil {
		return l.noteError("Claim", key, err, codes.OK)
	}
	if got.GetOutcome() != dedupv1.Outcome_OUTCOME_ACQUIRED {
		return true
	}
	rec := got.GetRecord()
	token := got.GetFencingToken()
	l.mu.Lock()
	l.acquisitions[key] = append(l.acquisitions[key], acquisition{token: token,
		start: rec.GetUpdatedAt().AsTime(), end: rec.GetLeaseExpiresAt().AsTime()})
	l.mu.Unlock()
	if abandon {
		return true
	}
	result := crashResult(key, token)
	_, err = c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: consumer, Key: key, FencingToken: token, Result: result})
	if err != nil {
		// LEASE_LOST: the lease ran out and another caller took over.
		return l.noteError("Complete", key, err, codes.Aborted)
	}
	l.mu.Lock()
	l.acks[key] = ackedComplete{token: token, result: result}
	l.mu.Unlock()
	return true
}

func crashResult(key string, token int64) []byte { return fmt.Appendf(nil, "%s@%d", key, token) }

// noteError records an error the workload does not expect: anything but
// the server being gone, or the code allowed for this call.
func (l *crashLog) noteError(call, key string, err error, allowed codes.Code) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		return false
	case allowed:
		return true
	}
	l.mu.Lock()
	l.unexpected = append(l.unexpected, fmt.Sprintf("%s(%s): %v", call, key, err))
	l.mu.Unlock()
	return true
}

// check asserts the promises against what the restarted server stores.
func (l *crashLog) check(t *testing.T, c dedupv1.DedupServiceClient) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.unexpected) > 0 {
		t.Errorf("%d unexpected errors, first: %s", len(l.unexpected), l.unexpected[0])
	}
	takeovers := 0
	for key, acqs := range l.acquisitions {
		slices.SortFunc(acqs, func(a, b acquisition) int { return int(a.token - b.token) })
		for i := 1; i < len(acqs); i++ {
			prev, next := acqs[i-1], acqs[i]
			if prev.token == next.token {
				t.Errorf("%s: token %d ACQUIRED by two callers", key, next.token)
			} else if next.start.Before(prev.end) {
				t.Errorf("%s: token %d acquired at %v, inside the lease of token %d (until %v)",
					key, next.token, next.start, prev.token, prev.end)
			}
			takeovers++
		}
		if ack, ok := l.acks[key]; ok && acqs[len(acqs)-1].token > ack.token {
			t.Errorf("%s: acquired with token %d after a Complete with token %d was acknowledged",
				key, acqs[len(acqs)-1].token, ack.token)
		}
	}
	for i := range crashKeys {
		key := fmt.Sprintf("crash-%d", i)
		l.checkStored(t, c, key)
	}
	t.Logf("%d acknowledged Completes, %d acquisitions over %d keys, %d takeovers checked",
		len(l.acks), l.countAcquisitions(), len(l.acquisitions), takeovers)
}

// checkStored: the key's record is valid and holds its acknowledged
// outcome, if it has one.
func (l *crashLog) checkStored(t *testing.T, c dedupv1.DedupServiceClient, key string) {
	t.Helper()
	got, err := c.Lookup(context.Background(), &dedupv1.LookupRequest{Consumer: consumer, Key: key})
	ack, acked := l.acks[key]
	acqs := l.acquisitions[key]
	if status.Code(err) == codes.NotFound && !acked && len(acqs) == 0 {
		return // never acquired by anyone the test heard from
	}
	if err != nil {
		t.Errorf("Lookup(%s): %v (acknowledged: %v, acquisitions: %d)", key, err, acked, len(acqs))
		return
	}
	rec := got.GetRecord()
	switch {
	case acked && (rec.GetState() != dedupv1.State_STATE_COMPLETED || rec.GetFencingToken() != ack.token || !bytes.Equal(rec.GetResult(), ack.result)):
		t.Errorf("%s: acknowledged Complete (token %d, %q) lost; stored %v", key, ack.token, ack.result, rec)
	case rec.GetState() == dedupv1.State_STATE_COMPLETED && !bytes.Equal(rec.GetResult(), crashResult(key, rec.GetFencingToken())):
		t.Errorf("%s: completed with %q, which is not the result of its token %d", key, rec.GetResult(), rec.GetFencingToken())
	case rec.GetState() != dedupv1.State_STATE_COMPLETED && rec.GetState() != dedupv1.State_STATE_PENDING:
		t.Errorf("%s: state %v; this workload only claims and completes", key, rec.GetState())
	case len(acqs) > 0 && rec.GetFencingToken() < acqs[len(acqs)-1].token:
		t.Errorf("%s: stored token %d is below the acquired token %d", key, rec.GetFencingToken(), acqs[len(acqs)-1].token)
	}
}

func (l *crashLog) countAcquisitions() int {
	n := 0
	for _, acqs := range l.acquisitions {
		n += len(acqs)
	}
	return n
}
