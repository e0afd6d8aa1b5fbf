package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/client/dedupdtest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// crashEnv carries a crashChild's orders from TestParkedCrashes.
const crashEnv = "DEDUPD_PARK_CRASH_CHILD"

// crashOrders tell a child process which event to deliver and where to
// kill itself.
type crashOrders struct {
	Addr, Stream, Crash, Ledger string
	Seq                         int64
	Lease                       time.Duration
}

const crashConsumer = "crash"

// ledger is the non-idempotent fake effect, shared by processes: each
// effect appends its sequence as one line of a file, so an effect done
// twice shows as two lines, whoever did it, and survives kill -9.
type ledger string

func (l ledger) apply(seq int64) error {
	f, err := os.OpenFile(string(l), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintf(f, "%d\n", seq) // one write: whole or absent
	return err
}

func (l ledger) lines() []string {
	b, _ := os.ReadFile(string(l))
	return texts(bytes.Fields(b))
}

// has is Settle: the effect of seq is in the ledger.
func (l ledger) has(seq int64) bool {
	for _, line := range l.lines() {
		if line == strconv.FormatInt(seq, 10) {
			return true
		}
	}
	return false
}

func texts(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

// inOrder is the options every delivery uses: park, and the ledger as
// effect and settle, for the delivered event and the released ones.
func inOrder(l ledger, seq int64, lease time.Duration, released client.ParkedFunc) client.InOrderOptions {
	return client.InOrderOptions{LeaseTTL: lease, Park: true, Payload: payloadOf(seq),
		Settle:   func(context.Context, int64) (bool, error) { return l.has(seq), nil },
		Released: released,
		SettleReleased: func(_ context.Context, ev *client.ParkedEvent) (bool, error) {
			return l.has(ev.GetSequence()), nil
		}}
}

func (l ledger) released(_ context.Context, ev *client.ParkedEvent) error {
	if !bytes.Equal(ev.GetPayload(), payloadOf(ev.GetSequence())) {
		return client.Terminal("WRONG_PAYLOAD", fmt.Errorf("event %d came back with %q", ev.GetSequence(), ev.GetPayload()), nil)
	}
	return l.apply(ev.GetSequence())
}

// crashChild runs a child's orders if this process is one, and then dies:
// by SIGKILL at the crash point, or with status 3 if it never got there.
func crashChild() bool {
	raw := os.Getenv(crashEnv)
	if raw == "" {
		return false
	}
	var o crashOrders
	if err := json.Unmarshal([]byte(raw), &o); err != nil {
		panic(err)
	}
	die := func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL); select {} }
	// after replies: the process dies once the server has answered.
	after := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
		invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		switch r := reply.(type) {
		case *dedupv1.ClaimStreamResponse:
			if o.Crash == "after-park" && r.GetOutcome() == client.StreamParked {
				die()
			}
		case *dedupv1.CompleteStreamResponse:
			seq := req.(*dedupv1.CompleteStreamRequest).GetSequence()
			if (o.Crash == "after-release" && seq == o.Seq && r.GetNext() != nil) ||
				(o.Crash == "after-completion" && seq == o.Seq+1) {
				die()
			}
		}
		return err
	}
	c, err := client.New(o.Addr, client.WithDialOptions(grpc.WithUnaryInterceptor(after)))
	if err != nil {
		panic(err)
	}
	l := ledger(o.Ledger)
	released := func(ctx context.Context, ev *client.ParkedEvent) error {
		if o.Crash == "before-effect" {
			die()
		}
		err := l.released(ctx, ev)
		if o.Crash == "after-effect" {
			die()
		}
		return err
	}
	_, err = c.DoInOrder(context.Background(), crashConsumer, o.Stream, o.Seq, inOrder(l, o.Seq, o.Lease, released),
		func(context.Context, int64) error {
			err := l.apply(o.Seq)
			if o.Crash == "delivered-after-effect" {
				die()
			}
			return err
		})
	fmt.Fprintf(os.Stderr, "child reached no crash point (%s): %v\n", o.Crash, err)
	os.Exit(3)
	return true
}

// A process killed (SIGKILL) at each point between park, release, effect
// and completion loses nothing: the message it did not ack is delivered
// again, the parked event it held is picked up by DoParked once its lease
// has run out, and every event's effect happens exactly once, in order.
func TestParkedCrashes(t *testing.T) {
	addr := dedupdtest.Start(t, dedupdtest.Embedded)
	const lease = 500 * time.Millisecond
	c, ctx := newClient(t, addr), testContext(t)
	for _, crash := range []string{"after-park", "delivered-after-effect", "after-release", "before-effect", "after-effect", "after-completion"} {
		t.Run(crash, func(t *testing.T) {
			l := ledger(filepath.Join(t.TempDir(), "ledger"))
			stream := "order-" + crash
			deliver := func(seq int64) {
				t.Helper()
				res, err := c.DoInOrder(ctx, crashConsumer, stream, seq, inOrder(l, seq, lease, l.released),
					func(context.Context, int64) error { return l.apply(seq) })
				if err != nil || res.UnfinishedErr != nil {
					t.Fatalf("deliver %d: %+v, %v", seq, res, err)
				}
			}
			// The child gets 3 to park, or 1 once 2..4 are parked; it dies
			// without acking, so its message is delivered again here.
			childSeq, before, after := int64(1), []int64{2, 3, 4}, []int64{1}
			if crash == "after-park" {
				childSeq, before, after = 3, nil, []int64{3, 2, 4, 1}
			}
			for _, seq := range before {
				deliver(seq)
			}
			runCrashChild(t, crashOrders{Addr: addr, Stream: stream, Crash: crash, Ledger: string(l), Seq: childSeq, Lease: lease})
			for _, seq := range after {
				deliver(seq)
			}
			pickups := pickUp(ctx, t, c, l, stream, 4)
			if got, want := l.lines(), []string{"1", "2", "3", "4"}; !slices.Equal(got, want) {
				t.Fatalf("effects %v, want each of 1..4 once, in order", got)
			}
			t.Logf("%s: %d events picked up after the crash", crash, pickups)
		})
	}
}

// pickUp runs DoParked on the stream until its mark reaches last, and
// returns how many events it finished.
func pickUp(ctx context.Context, t *testing.T, c *client.Client, l ledger, stream string, last int64) int {
	t.Helper()
	finished := 0
	for {
		st, err := c.GetStream(ctx, crashConsumer, stream)
		if err != nil {
			t.Fatal(err)
		}
		if st.GetHighWater() >= last {
			return finished
		}
		res, err := c.DoParked(ctx, crashConsumer, client.ParkedOptions{Stream: stream, LeaseTTL: time.Second,
			Settle: func(_ context.Context, ev *client.ParkedEvent) (bool, error) { return l.has(ev.GetSequence()), nil }},
			l.released)
		if err != nil || res.UnfinishedErr != nil {
			t.Fatalf("DoParked: %+v, %v", res, err)
		}
		finished += len(res.Released)
		if !res.Found {
			time.Sleep(50 * time.Millisecond) // the crashed holder's lease has not run out yet
		}
	}
}

// runCrashChild runs this test binary as a crashChild and checks that it
// died by SIGKILL, at the crash point.
func runCrashChild(t *testing.T, o crashOrders) {
	t.Helper()
	raw, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+string(raw))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the child did not die at %s: %v\n%s", o.Crash, err, stderr.String())
	}
}
