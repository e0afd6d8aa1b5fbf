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
var dedupdBin, consumerBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nats-payments-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		dedupdBin = os.Getenv("DEDUPD_BIN")
		if dedupdBin == "" {
			dedupdBin = filepath.Join(dir, "dedupd")
			if err := goBuild("../..", dedupdBin, "./cmd/dedupd"); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		consumerBin = filepath.Join(dir, "nats-payments")
		if err := goBuild(".", consumerBin, "."); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
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

// fakeGateway is a payment gateway that is not idempotent: every POST
// /charges charges again. GET /charges?event_id= looks the first charge of
// an event up. It is the test's oracle: it counts every charge.
type fakeGateway struct {
	mu      sync.Mutex
	charges map[string][]string // event id → charge ids, in order
	next    int
	lookups int
}

func newFakeGateway() *fakeGateway { return &fakeGateway{charges: map[string][]string{}} }

func (g *fakeGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/charges" {
		http.NotFound(w, r)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var body chargeBody
	switch r.Method {
	case http.MethodPost:
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&body); err != nil || body.EventID == "" {
			http.Error(w, "bad charge", http.StatusBadRequest)
			return
		}
		g.next++
		body.ChargeID = fmt.Sprintf("ch_%d", g.next)
		g.charges[body.EventID] = append(g.charges[body.EventID], body.ChargeID)
		w.WriteHeader(http.StatusCreated)
	case http.MethodGet:
		g.lookups++
		body.EventID = r.URL.Query().Get("event_id")
		ids := g.charges[body.EventID]
		if len(ids) == 0 {
			http.NotFound(w, r)
			return
		}
		body.ChargeID = ids[0]
	default:
		http.Error(w, "method", http.StatusMethodNotAllowed)
		return
	}
	_ = json.NewEncoder(w).Encode(body)
}

func (g *fakeGateway) lookupCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lookups
}

// books returns a copy of the charges per event.
func (g *fakeGateway) books() map[string][]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string][]string, len(g.charges))
	for id, c := range g.charges {
		out[id] = append([]string(nil), c...)
	}
	return out
}

// figures are what a run counts, from the consumers' reports and the
// processes' exits.
type figures struct {
	mu                    sync.Mutex
	kills                 map[string]int // crash point → SIGKILLs there
	drops, otherExits     int
	externalKills         int // kill -9 from the test, at no chosen point
	takeovers, settleHits int
	completed, replayed   int
	errors                int
	stderr                strings.Builder
}

// read parses one consumer's stdout: the lines hooks and handle print.
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
		case "drop":
			f.kills[pointDrop]++
			f.drops++
		case "takeover":
			f.takeovers++
		case "settled":
			f.settleHits++
		case "event":
			switch fields[len(fields)-1] {
			case "completed", "settled":
				f.completed++
			case "replayed":
				f.replayed++
			default:
				f.errors++
			}
		}
		f.mu.Unlock()
	}
}

// supervisor keeps slots consumer processes running, restarting each one
// that dies, until stop.
type supervisor struct {
	args []string
	env  []string
	fig  *figures
	mu   sync.Mutex
	cur  map[int]*exec.Cmd
	done bool
	wg   sync.WaitGroup
}

func (s *supervisor) start(t *testing.T, slots int) {
	s.cur = map[int]*exec.Cmd{}
	for slot := range slots {
		s.wg.Go(func() { s.loop(t, slot) })
	}
}

func (s *supervisor) loop(t *testing.T, slot int) {
	for {
		cmd := exec.Command(consumerBin, s.args...)
		cmd.Env = append(os.Environ(), s.env...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Error(err)
			return
		}
		cmd.Stderr = &lockedWriter{f: s.fig}
		s.mu.Lock()
		if s.done {
			s.mu.Unlock()
			return
		}
		if err := cmd.Start(); err != nil {
			s.mu.Unlock()
			t.Error(err)
			return
		}
		s.cur[slot] = cmd
		s.mu.Unlock()
		s.fig.read(out)
		err = cmd.Wait()
		s.mu.Lock()
		stopping := s.done
		s.mu.Unlock()
		if stopping {
			return
		}
		var exit *exec.ExitError
		switch {
		case asExit(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
			// a crash point killed it: restart
		case asExit(err, &exit) && exit.ExitCode() == 3:
			// it dropped its connection on purpose: restart
		default:
			s.fig.mu.Lock()
			s.fig.otherExits++
			s.fig.mu.Unlock()
			t.Errorf("consumer exited unexpectedly: %v", err)
		}
	}
}

func asExit(err error, target **exec.ExitError) bool { return errors.As(err, target) }

// killOne sends SIGKILL to the consumer in slot, wherever it is, as an
// operator's kill -9 would: mid-charge, mid-Complete or idle.
func (s *supervisor) killOne(slot int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cmd := s.cur[slot]; cmd != nil && !s.done && cmd.Process.Signal(syscall.SIGKILL) == nil {
		s.fig.mu.Lock()
		s.fig.externalKills++
		s.fig.mu.Unlock()
	}
}

// stop kills every consumer and waits for the loops to end.
func (s *supervisor) stop() {
	s.mu.Lock()
	s.done = true
	for _, cmd := range s.cur {
		_ = cmd.Process.Kill()
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
