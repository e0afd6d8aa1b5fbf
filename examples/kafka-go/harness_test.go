package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// binaries are built once per test binary in TestMain.
var dedupdBin, consumerBin, fakeKafkaBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kafka-go-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		dedupdBin = os.Getenv("DEDUPD_BIN")
		builds := []struct{ dir, out, pkg string }{
			{".", filepath.Join(dir, "kafka-go"), "."},
			{".", filepath.Join(dir, "fakekafka"), "./cmd/fakekafka"},
		}
		if dedupdBin == "" {
			dedupdBin = filepath.Join(dir, "dedupd")
			builds = append(builds, struct{ dir, out, pkg string }{"../..", dedupdBin, "./cmd/dedupd"})
		}
		consumerBin, fakeKafkaBin = builds[0].out, builds[1].out
		for _, b := range builds {
			if err := goBuild(b.dir, b.out, b.pkg); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		return m.Run()
	}()
	os.Exit(code)
}

func goBuild(dir, out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s (in %s): %w", pkg, dir, err)
	}
	return nil
}

// fakeLedger is a ledger that is not idempotent: every POST /entries books
// another entry. GET /entries?event_id= looks the first entry of an event
// up. It is the test's oracle: it counts every entry.
type fakeLedger struct {
	mu      sync.Mutex
	entries map[string][]string // event id → entry ids, in order
	next    int
	lookups int
}

func newFakeLedger() *fakeLedger { return &fakeLedger{entries: map[string][]string{}} }

func (l *fakeLedger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/entries" {
		http.NotFound(w, r)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var body entryBody
	switch r.Method {
	case http.MethodPost:
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&body); err != nil || body.EventID == "" {
			http.Error(w, "bad entry", http.StatusBadRequest)
			return
		}
		l.next++
		body.EntryID = fmt.Sprintf("je_%d", l.next)
		l.entries[body.EventID] = append(l.entries[body.EventID], body.EntryID)
		w.WriteHeader(http.StatusCreated)
	case http.MethodGet:
		l.lookups++
		body.EventID = r.URL.Query().Get("event_id")
		ids := l.entries[body.EventID]
		if len(ids) == 0 {
			http.NotFound(w, r)
			return
		}
		body.EntryID = ids[0]
	default:
		http.Error(w, "method", http.StatusMethodNotAllowed)
		return
	}
	_ = json.NewEncoder(w).Encode(body)
}

func (l *fakeLedger) lookupCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lookups
}

// books returns a copy of the entries per event.
func (l *fakeLedger) books() map[string][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string][]string, len(l.entries))
	for id, e := range l.entries {
		out[id] = append([]string(nil), e...)
	}
	return out
}

// figures are what a run counts, from the consumers' reports and the
// processes' exits.
type figures struct {
	mu                    sync.Mutex
	kills                 map[string]int // crash point → SIGKILLs there
	externalKills         int            // kill -9 from the test, at no chosen point
	takeovers, settleHits int
	outcomes              map[string]int // completed, settled, replayed, dead-lettered
	cleanExits, badExits  int            // after SIGTERM at the end
	stderr                strings.Builder
}

func newFigures() *figures { return &figures{kills: map[string]int{}, outcomes: map[string]int{}} }

// read parses one consumer's stdout: the lines hooks and consume print.
func (f *figures) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		f.mu.Lock()
		switch fields[0] {
		case "kill":
			f.kills[fields[1]]++
		case "takeover":
			f.takeovers++
		case "settled":
			f.settleHits++
		case "event":
			f.outcomes[fields[len(fields)-1]]++
		}
		f.mu.Unlock()
	}
}

// supervisor keeps slots consumer processes running, restarting each one
// that dies of SIGKILL, until stop sends SIGTERM to all of them.
type supervisor struct {
	t        *testing.T
	args     []string
	env      []string
	fig      *figures
	mu       sync.Mutex
	cur      map[int]*exec.Cmd
	stopping bool
	wg       sync.WaitGroup
}

func (s *supervisor) start(slots int) {
	s.cur = map[int]*exec.Cmd{}
	for slot := range slots {
		s.wg.Go(func() { s.loop(slot) })
	}
}

func (s *supervisor) loop(slot int) {
	for {
		// Each slot is a static member of the group, as a pod of a
		// StatefulSet would be: its restart takes its partitions back.
		cmd := exec.Command(consumerBin, append(s.args, "-instance-id", fmt.Sprintf("consumer-%d", slot))...)
		cmd.Env = append(os.Environ(), s.env...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			s.t.Error(err)
			return
		}
		cmd.Stderr = &lockedWriter{f: s.fig}
		s.mu.Lock()
		if s.stopping {
			s.mu.Unlock()
			return
		}
		if err := cmd.Start(); err != nil {
			s.mu.Unlock()
			s.t.Error(err)
			return
		}
		s.cur[slot] = cmd
		s.mu.Unlock()
		s.fig.read(out)
		err = cmd.Wait()
		s.mu.Lock()
		stopping := s.stopping
		s.mu.Unlock()
		if stopping {
			s.countExit(err)
			return
		}
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			s.t.Errorf("consumer exited unexpectedly: %v", err)
			return
		}
		// killed at a crash point or by the test: restart
	}
}

// countExit counts how a consumer ended after SIGTERM: status 0 is a
// clean exit (it left the group and closed its client).
func (s *supervisor) countExit(err error) {
	s.fig.mu.Lock()
	defer s.fig.mu.Unlock()
	if err == nil {
		s.fig.cleanExits++
		return
	}
	s.fig.badExits++
	s.t.Errorf("consumer did not exit cleanly on SIGTERM: %v", err)
}

// killOne sends SIGKILL to the consumer in slot, wherever it is, as an
// operator's kill -9 would: mid-post, mid-Complete, mid-commit or idle.
func (s *supervisor) killOne(slot int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cmd := s.cur[slot]; cmd != nil && !s.stopping && cmd.Process.Signal(syscall.SIGKILL) == nil {
		s.fig.mu.Lock()
		s.fig.externalKills++
		s.fig.mu.Unlock()
	}
}

// stop sends SIGTERM to every consumer and waits for them to exit. A
// consumer that never exits shows as a hung test, which go test's own
// -timeout ends; the counts of countExit are the verdict.
func (s *supervisor) stop() {
	s.mu.Lock()
	s.stopping = true
	for _, cmd := range s.cur {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// lockedWriter collects the consumers' logs, capped, for failure reports.
type lockedWriter struct{ f *figures }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	if w.f.stderr.Len() < 64<<10 {
		w.f.stderr.Write(p)
	}
	return len(p), nil
}
