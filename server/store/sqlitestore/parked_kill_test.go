package sqlitestore_test

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/storetest"
)

// parkKillChildEnv, when set, makes TestParkedSurvivesKill act as the
// child: hand event 2 out by completing 1, then park events 3, 4, ... and
// say "parked N" after each acknowledgement, until it is killed mid-stream.
const parkKillChildEnv = "SQLITESTORE_TEST_PARK_KILL_CHILD_DIR"

const parkKillLease = 200 * time.Millisecond

func parkKillPolicy() store.StreamPolicy {
	return store.StreamPolicy{DefaultLeaseTTL: time.Minute, StreamTTL: time.Hour}
}

func parkKillChild(t *testing.T, dir string) {
	s := openStore(t, dir)
	ctx := t.Context()
	p := store.ClaimStreamParams{Consumer: "c", Stream: "s", Sequence: 1, Owner: "child", Policy: parkKillPolicy()}
	held, err := s.ClaimStream(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	p.Sequence, p.Park, p.Payload = 2, true, []byte("event 2")
	if _, err := s.ClaimStream(ctx, p); err != nil {
		t.Fatal(err)
	}
	r, err := s.CompleteStream(ctx, store.CompleteStreamParams{Consumer: "c", Stream: "s", Sequence: 1,
		FencingToken: held.Stream.FencingToken, NextLeaseTTL: parkKillLease, Policy: parkKillPolicy()})
	if err != nil || r.Next == nil {
		t.Fatalf("complete 1: next %+v, %v", r.Next, err)
	}
	fmt.Printf("handed 2 %d\n", r.Next.FencingToken)
	for seq := int64(3); seq < 900; seq++ {
		p.Sequence, p.Payload = seq, fmt.Appendf(nil, "event %d", seq)
		if res, err := s.ClaimStream(ctx, p); err != nil || res.Outcome != store.StreamParked {
			t.Fatalf("park %d: %v, %v", seq, res.Outcome, err)
		}
		fmt.Printf("parked %d\n", seq)
	}
	time.Sleep(time.Minute) // killed by now
}

// TestParkedSurvivesKill: kill -9 amid a run of parks loses no parked
// event that was acknowledged, keeps the hand-out in flight, and a pickup
// after the lease runs out drains them all in order with their payloads.
func TestParkedSurvivesKill(t *testing.T) {
	if dir := os.Getenv(parkKillChildEnv); dir != "" {
		parkKillChild(t, dir)
		return
	}
	dir, cmd, stdout := storetest.StartChild(t, parkKillChildEnv)
	lines := bufio.NewScanner(stdout)
	var handedToken, acked int64
	for lines.Scan() && acked < 40 {
		f := strings.Fields(lines.Text())
		switch {
		case len(f) == 3 && f[0] == "handed":
			_, _ = fmt.Sscan(f[2], &handedToken)
		case len(f) == 2 && f[0] == "parked":
			_, _ = fmt.Sscan(f[1], &acked)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if handedToken == 0 || acked < 40 {
		t.Fatalf("child handed out token %d and acknowledged parks up to %d before it was killed", handedToken, acked)
	}

	s := openStore(t, dir)
	defer s.Close()
	ctx := t.Context()
	st, err := s.GetStream(ctx, "c", "s")
	if err != nil || st.InFlight != 2 || st.FencingToken != handedToken || st.HighWater != 1 {
		t.Fatalf("after kill -9: %+v, %v; want 2 in flight under token %d", st, err, handedToken)
	}
	evs, err := s.ListParked(ctx, store.ListParkedParams{Consumer: "c", Stream: "s", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var parked []int64
	for _, ev := range evs {
		parked = append(parked, ev.Sequence)
	}
	for seq := int64(2); seq <= acked; seq++ {
		if !slices.Contains(parked, seq) {
			t.Fatalf("acknowledged park of %d lost by kill -9 (parked %v)", seq, parked)
		}
	}
	if st.Parked != int64(len(parked)) {
		t.Fatalf("stream counts %d parked, %d stored", st.Parked, len(parked))
	}

	// The hand-out's holder died: once its lease runs out, a pickup drains
	// everything parked, in order, each payload as it was parked.
	time.Sleep(parkKillLease + parkKillLease/2)
	r, err := s.ClaimParked(ctx, store.ClaimParkedParams{Consumer: "c", Owner: "pickup", Policy: parkKillPolicy()})
	if err != nil || r.Event == nil {
		t.Fatalf("pickup after the crash: %+v, %v", r.Event, err)
	}
	next, held := r.Event, r.Stream
	var drained []int64
	for next != nil {
		if want := fmt.Sprintf("event %d", next.Event.Sequence); string(next.Event.Payload) != want {
			t.Fatalf("handed out %q, want %q", next.Event.Payload, want)
		}
		drained = append(drained, next.Event.Sequence)
		res, err := s.CompleteStream(ctx, store.CompleteStreamParams{Consumer: "c", Stream: "s", Sequence: next.Event.Sequence,
			FencingToken: next.FencingToken, Policy: parkKillPolicy()})
		if err != nil {
			t.Fatal(err)
		}
		next, held = res.Next, res.Stream
	}
	if !slices.Equal(drained, parked) || held.Parked != 0 || held.HighWater != parked[len(parked)-1] {
		t.Fatalf("drained %v of parked %v; stream %+v", drained, parked, held)
	}
}
