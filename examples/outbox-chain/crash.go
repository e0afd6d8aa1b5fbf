package main

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// The crash points, in the order an event passes them. Each role checks
// its own; the test arms them all.
const (
	producerBeforeCommit = "producer.before-commit" // order and outbox row written, not committed
	producerAfterCommit  = "producer.after-commit"  // committed, not reported

	relayBeforePublish = "relay.before-publish" // row read, not published
	relayAfterPublish  = "relay.after-publish"  // published, its confirm not awaited
	relayAfterConfirm  = "relay.after-confirm"  // confirmed, the row not marked sent
	relayAfterMark     = "relay.after-mark"     // marked sent and committed

	consumerBeforeReceipt  = "consumer.before-receipt"  // effect and next event written, no receipt, not committed
	consumerAfterReceipt   = "consumer.after-receipt"   // receipt written, not committed
	consumerBeforeComplete = "consumer.before-complete" // effect and receipt committed, Complete not called
	consumerAfterComplete  = "consumer.after-complete"  // outcome stored in dedupd, message not acked
	consumerAfterAck       = "consumer.after-ack"       // acked
)

// CrashPoints lists every crash point, for the test and the usage.
var CrashPoints = []string{
	producerBeforeCommit, producerAfterCommit,
	relayBeforePublish, relayAfterPublish, relayAfterConfirm, relayAfterMark,
	consumerBeforeReceipt, consumerAfterReceipt, consumerBeforeComplete, consumerAfterComplete, consumerAfterAck,
}

// crasher kills the process with SIGKILL (kill -9, not os.Exit: no
// deferred call, no flush, no goodbye to the broker or the database) at
// the crash points named by CHAIN_CRASH_POINTS ("all", or a comma
// list), for about one event in CHAIN_CRASH_EVERY, chosen by a hash of
// point and event id so that a run is repeatable. Each (point, event)
// kills once: a marker file in CHAIN_CRASH_DIR, created before the kill,
// tells the restarted process to carry on.
type crasher struct {
	every uint64
	dir   string
	armed map[string]bool
}

func crasherFromEnv() (crasher, error) {
	v := os.Getenv("CHAIN_CRASH_EVERY")
	if v == "" {
		return crasher{}, nil
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return crasher{}, fmt.Errorf("CHAIN_CRASH_EVERY=%q: %w", v, err)
	}
	c := crasher{every: n, dir: os.Getenv("CHAIN_CRASH_DIR"), armed: map[string]bool{}}
	if c.dir == "" {
		return crasher{}, fmt.Errorf("CHAIN_CRASH_EVERY needs CHAIN_CRASH_DIR (where kills are recorded)")
	}
	points := os.Getenv("CHAIN_CRASH_POINTS")
	if points == "" || points == "all" {
		points = strings.Join(CrashPoints, ",")
	}
	for p := range strings.SplitSeq(points, ",") {
		c.armed[strings.TrimSpace(p)] = true
	}
	return c, nil
}

// Chosen says whether event id crashes at point (before its marker).
func Chosen(point, id string, every uint64) bool {
	if every == 0 {
		return false
	}
	f := fnv.New64a()
	f.Write([]byte(point + "/" + id))
	return f.Sum64()%every == 0
}

// at kills the process at point when event id is chosen there and has
// not crashed there yet.
func (c crasher) at(point, id string) {
	if !c.armed[point] || !Chosen(point, id, c.every) {
		return
	}
	f, err := os.OpenFile(filepath.Join(c.dir, point+"@"+id), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return // crashed here before (or no marker can be made: a kill would loop)
	}
	_ = f.Close()
	fmt.Fprintf(os.Stdout, "kill %s %s\n", point, id)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}
