package main

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// The crash points of the consumer, in the order a record passes them.
const (
	pointPolled    = "polled"    // polled, not claimed yet
	pointClaimed   = "claimed"   // the key is claimed, nothing posted yet
	pointPosted    = "posted"    // the ledger entry is posted, Do has not completed
	pointCompleted = "completed" // Do completed the key, the offset is not committed
)

// crashPoints lists them for reports and checks.
var crashPoints = []string{pointPolled, pointClaimed, pointPosted, pointCompleted}

// hooks report what the consumer does on stdout, one line per fact, and
// kill the process with SIGKILL (as kill -9 would) at the crash points
// chosen by KAFKA_CRASH_EVERY: with n > 0, about one event in n crashes at
// each point. Which events crash depends only on their id, so a run is
// repeatable. Kafka has no delivery count to tell a first pass from a
// redelivery, so each crash leaves a marker file in KAFKA_CRASH_DIR and
// happens once per point and event, across restarts. Writes to os.Stdout
// are unbuffered: a line printed before a kill is not lost.
type hooks struct {
	every uint64
	dir   string
}

func hooksFromEnv() (hooks, error) {
	v := os.Getenv("KAFKA_CRASH_EVERY")
	if v == "" {
		return hooks{}, nil
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return hooks{}, fmt.Errorf("KAFKA_CRASH_EVERY=%q: %w", v, err)
	}
	dir := os.Getenv("KAFKA_CRASH_DIR")
	if n > 0 && dir == "" {
		return hooks{}, errors.New("KAFKA_CRASH_EVERY needs KAFKA_CRASH_DIR, where crashes are remembered")
	}
	return hooks{every: n, dir: dir}, nil
}

// at kills the process at point if event id is chosen for it and has not
// crashed there yet.
func (h hooks) at(point, id string) {
	if h.every == 0 {
		return
	}
	f := fnv.New64a()
	f.Write([]byte(point + "/" + id))
	if f.Sum64()%h.every != 0 {
		return
	}
	marker, err := os.OpenFile(filepath.Join(h.dir, point+"-"+id), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return // crashed here on an earlier pass
	}
	if err == nil {
		err = marker.Close()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "crash marker: %v\n", err)
		return
	}
	fmt.Fprintf(os.Stdout, "kill %s %s\n", point, id)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}

func (hooks) takeover(id string, attempt int64) {
	fmt.Fprintf(os.Stdout, "takeover %s %d\n", id, attempt)
}
func (hooks) settled(id string) { fmt.Fprintf(os.Stdout, "settled %s\n", id) }
