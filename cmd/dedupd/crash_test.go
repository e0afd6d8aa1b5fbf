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
// leases, and complete most of what they acquire, some after extending the
// lease, some after releasing and claiming the key again and then trying
// the token they gave up (which must be refused);
// some they release with a retryable Reject, so that the next claim
// acquires at once; the rest they abandon, so that later claims take the
// key over once the lease has run out.
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
		log := &crashLog{acks: map[string]ackedComplete{}, acquisitions: map[string][]acquisition{}, answered: map[string]int{}}

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
// on the server's clock. end moves with an acknowledged ExtendLease, and to
// the release time with an acknowledged retryable Reject; a release whose
// answer was lost sets it to start, since the key may have been released
// at any point, so the next acquisition can start at any time.
type acquisition struct {
	token      int64
	start, end time.Time
}

// crashAction is what a worker does with a key it acquired.
type crashAction int

const (
	crashComplete      crashAction = iota
	crashAbandon                   // let the lease run out
	crashStaleComplete             // Complete with the previous token first: must be LEASE_LOST
	crashExtend                    // ExtendLease, then Complete
	crashRelease                   // a retryable Reject
	crashActions
)

// crashLog is what the callers were told.
type crashLog struct {
	mu           sync.Mutex
	acks         map[string]ackedComplete
	acquisitions map[string][]acquisition
	unexpected   []string
	// answered counts the acknowledged answers per call, to show that the
	// workload exercised every path.
	answered map[string]int
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
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(phase, uint64(w)))
			for ctx.Err() == nil {
				action := crashAction(rng.IntN(2 * int(crashActions)))
				if action >= crashActions {
					action = crashComplete // half the cycles complete plainly
				}
				if !log.cycle(c, fmt.Sprintf("crash-%d", rng.IntN(crashKeys)), action) {
					time.Sleep(10 * time.Millisecond) // the server is down; don't spin
				}
			}
		})
	}
	return &wg
}

// cycle claims key and, if it acquires it, does action. It returns false
// when the server did not answer.
func (l *crashLog) cycle(c dedupv1.DedupServiceClient, key string, action crashAction) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	token, answered := l.claim(ctx, c, key)
	if token == 0 {
		return answered
	}
	switch action {
	case crashAbandon:
		return true
	case crashRelease:
		return l.release(ctx, c, key, token)
	case crashStaleComplete:
		// Make the token stale: give the key up and claim it again (or
		// see someone else claim it).
		stale := token
		if !l.release(ctx, c, key, stale) {
			return false
		}
		if token, answered = l.claim(ctx, c, key); answered && !l.staleComplete(ctx, c, key, stale) {
			return false
		}
		if token == 0 {
			return answered
		}
	case crashExtend:
		r, err := c.ExtendLease(ctx, &dedupv1.ExtendLeaseRequest{Consumer: consumer, Key: key, FencingToken: token,
			LeaseTtl: durationpb.New(crashLease)})
		if err != nil {
			// LEASE_LOST: the lease ran out and another caller took over.
			return l.noteError("ExtendLease", key, err, codes.Aborted)
		}
		l.setLeaseEnd(key, token, r.GetRecord().GetLeaseExpiresAt().AsTime(), "ExtendLease")
	}
	result := crashResult(key, token)
	_, err := c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: consumer, Key: key, FencingToken: token, Result: result})
	if err != nil {
		// LEASE_LOST: the lease ran out and another caller took over.
		return l.noteError("Complete", key, err, codes.Aborted)
	}
	l.mu.Lock()
	l.acks[key] = ackedComplete{token: token, result: result}
	l.answered["Complete"]++
	l.mu.Unlock()
	return true
}

// claim claims key and logs an acquisition. It returns the token acquired,
// or 0, and whether the server answered.
func (l *crashLog) claim(ctx context.Context, c dedupv1.DedupServiceClient, key string) (int64, bool) {
	got, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: consumer, Key: key, LeaseTtl: durationpb.New(crashLease)})
	if err != nil {
		return 0, l.noteError("Claim", key, err, codes.OK)
	}
	if got.GetOutcome() != dedupv1.Outcome_OUTCOME_ACQUIRED {
		return 0, true
	}
	rec := got.GetRecord()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acquisitions[key] = append(l.acquisitions[key], acquisition{token: got.GetFencingToken(),
		start: rec.GetUpdatedAt().AsTime(), end: rec.GetLeaseExpiresAt().AsTime()})
	return got.GetFencingToken(), true
}

// staleComplete sends a Complete with a token that is not the key's current
// one. Only LEASE_LOST is right: an OK would let a holder whose lease was
// taken over overwrite its successor's outcome.
func (l *crashLog) staleComplete(ctx context.Context, c dedupv1.DedupServiceClient, key string, stale int64) bool {
	_, err := c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: consumer, Key: key, FencingToken: stale,
		Result: crashResult(key, stale)})
	if err == nil {
		l.mu.Lock()
		l.unexpected = append(l.unexpected, fmt.Sprintf("Complete(%s) with stale token %d: accepted", key, stale))
		l.mu.Unlock()
		return true
	}
	if status.Code(err) == codes.Aborted {
		l.mu.Lock()
		l.answered["stale Complete refused"]++
		l.mu.Unlock()
	}
	return l.noteError("stale Complete", key, err, codes.Aborted)
}

// release gives the key up with a retryable Reject, ending the lease at
// once: the next claim acquires without waiting for it.
func (l *crashLog) release(ctx context.Context, c dedupv1.DedupServiceClient, key string, token int64) bool {
	r, err := c.Reject(ctx, &dedupv1.RejectRequest{Consumer: consumer, Key: key, FencingToken: token,
		Reason: "retry", Retryable: true})
	switch status.Code(err) {
	case codes.OK:
		l.setLeaseEnd(key, token, r.GetRecord().GetUpdatedAt().AsTime(), "release")
		return true
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		// The release may have been applied: its time is unknown.
		l.mu.Lock()
		acqs := l.acquisitions[key]
		if last := &acqs[len(acqs)-1]; last.token == token {
			last.end = last.start
		}
		l.mu.Unlock()
	}
	return l.noteError("Reject", key, err, codes.Aborted)
}

// setLeaseEnd records that the lease of token on key now ends at end.
func (l *crashLog) setLeaseEnd(key string, token int64, end time.Time, call string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.answered[call]++
	for i := range l.acquisitions[key] {
		if a := &l.acquisitions[key][i]; a.token == token {
			a.end = end
		}
	}
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
	t.Logf("%d acknowledged Completes, %d acquisitions over %d keys, %d takeovers checked; answers: %v",
		len(l.acks), l.countAcquisitions(), len(l.acquisitions), takeovers, l.answered)
	for _, call := range []string{"Complete", "stale Complete refused", "ExtendLease", "release"} {
		if l.answered[call] == 0 {
			t.Errorf("the workload got no acknowledged %s; it did not exercise that path", call)
		}
	}
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
	case rec.GetState() == dedupv1.State_STATE_REJECTED:
		t.Errorf("%s: REJECTED; this workload only rejects retryably", key)
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
