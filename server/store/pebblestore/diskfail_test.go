package pebblestore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pebblestore"
	"github.com/dedupd/dedupd/server/store/storetest"
)

// diskFullChildEnv, when set, makes TestFullDiskStopsTheProcess act as the
// child: claim keys in the directory it names, print each acknowledged
// one, and fill the disk partway through.
const diskFullChildEnv = "PEBBLESTORE_TEST_DISK_FULL_DIR"

// acksBeforeFull is how many claims the child acknowledges before every
// write to its disk starts failing with ENOSPC.
const acksBeforeFull = 200

// Pebble cannot take a failed WAL write back (its commit pipeline is
// stuck behind it), so it ends the process instead of answering the
// caller. What dedupd promises on that disk is therefore fail-stop: the
// process exits with an error status, nothing acknowledged is lost, and
// the store opens again once the disk has room. SQLite, by contrast,
// refuses the write and keeps serving reads (server/storehealth_test.go).
func TestFullDiskStopsTheProcess(t *testing.T) {
	if dir := os.Getenv(diskFullChildEnv); dir != "" {
		runDiskFullChild(dir)
		return
	}
	dir, cmd, stdout := storetest.StartChild(t, diskFullChildEnv)
	var acked []string
	sawFull := false
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		switch line := lines.Text(); {
		case strings.HasPrefix(line, "ack "):
			acked = append(acked, strings.TrimPrefix(line, "ack "))
		case line == "full":
			sawFull = true
		case strings.HasPrefix(line, "refused "):
			t.Logf("child: %s", line)
		}
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	switch {
	case !sawFull:
		t.Fatalf("the child ended (%v) before its disk was made full, after %d claims", err, len(acked))
	case !errors.As(err, &exit) || exit.Success():
		t.Fatalf("the child exited with %v after its disk filled; want the process stopped with an error status", err)
	case strings.Contains(exit.String(), "killed"):
		t.Fatalf("the child was killed (%v), not stopped by the store", err)
	}
	if len(acked) < acksBeforeFull {
		t.Fatalf("%d claims acknowledged, want at least the %d before the disk filled", len(acked), acksBeforeFull)
	}

	s := openStore(t, dir)
	defer s.Close()
	for _, key := range acked {
		if res := claim(t, s, key); res.Outcome != store.InProgress {
			t.Fatalf("%s, acknowledged before the disk filled, reopened as %v; want IN_PROGRESS (its claim kept)", key, res.Outcome)
		}
	}
	t.Logf("%d claims acknowledged, all kept; the child exited with %v", len(acked), err)
}

// runDiskFullChild claims keys from 8 goroutines; after acksBeforeFull
// acknowledgements every write to the disk fails with ENOSPC. A claim the
// store answers with an error is printed as refused; the store is
// expected to end the process before long.
func runDiskFullChild(dir string) {
	full := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			return syscall.ENOSPC
		}
		return nil
	})}
	s, err := pebblestore.Open(context.Background(), dir, pebblestore.OptionsOnFS(errorfs.Wrap(vfs.Default, full)))
	if err != nil {
		fmt.Println("open failed:", err)
		os.Exit(3)
	}
	var (
		mu    sync.Mutex
		acked int
		wg    sync.WaitGroup
	)
	for g := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				key := "k-" + strconv.Itoa(g) + "-" + strconv.Itoa(i)
				_, err := s.Claim(context.Background(), store.ClaimParams{Consumer: "c", Key: key, Digest: []byte("d"), Policy: policy})
				mu.Lock()
				if err != nil {
					fmt.Println("refused", key, err)
				} else {
					fmt.Println("ack", key)
					if acked++; acked == acksBeforeFull {
						full.On()
						fmt.Println("full")
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}
