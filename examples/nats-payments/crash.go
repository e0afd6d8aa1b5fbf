package main

import (
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"syscall"
)

// The crash points of the consumer, in the order a message passes them.
const (
	pointClaimed  = "claimed"  // the key is claimed, nothing charged yet
	pointCharged  = "charged"  // the gateway charged, Do has not completed
	pointComplete = "complete" // Do completed the key, the message is not acked
	pointDrop     = "drop"     // as complete, but the connection is closed instead
)

// hooks report what the consumer does on stdout, one line per fact, and
// kill the process (SIGKILL, as kill -9 would) at the crash points chosen
// by PAYMENTS_CRASH_EVERY: with n > 0, about one event in n crashes at each
// point, the first time it passes there (attempt 1 for the points inside
// fn, a fresh outcome for the others). Which events crash depends only on
// their id, so a run is repeatable. Writes to os.Stdout are unbuffered:
// a line printed before a kill is not lost.
type hooks struct {
	every uint64
}

func hooksFromEnv() (hooks, error) {
	v := os.Getenv("PAYMENTS_CRASH_EVERY")
	if v == "" {
		return hooks{}, nil
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return hooks{}, fmt.Errorf("PAYMENTS_CRASH_EVERY=%q: %w", v, err)
	}
	return hooks{every: n}, nil
}

// chosen says whether event id crashes at point.
func (h hooks) chosen(point, id string) bool {
	if h.every == 0 {
		return false
	}
	f := fnv.New64a()
	f.Write([]byte(point + "/" + id))
	return f.Sum64()%h.every == 0
}

// at kills the process at point for a chosen event passing it first.
func (h hooks) at(point, id string, first bool) {
	if first && h.chosen(point, id) {
		h.kill(point, id)
	}
}

func (hooks) kill(point, id string) {
	fmt.Fprintf(os.Stdout, "kill %s %s\n", point, id)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}

func (hooks) takeover(id string, attempt int64) {
	fmt.Fprintf(os.Stdout, "takeover %s %d\n", id, attempt)
}
func (hooks) settled(id string) { fmt.Fprintf(os.Stdout, "settled %s\n", id) }
