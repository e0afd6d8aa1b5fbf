package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// binaries holds the dedupd and outbox-chain builds of one test.
type binaries struct{ dedupd, chain string }

// build compiles dedupd from the repository root (or takes $DEDUPD_BIN)
// and this example.
func build(t *testing.T) binaries {
	dir := t.TempDir()
	b := binaries{dedupd: os.Getenv("DEDUPD_BIN"), chain: filepath.Join(dir, "outbox-chain")}
	if b.dedupd == "" {
		b.dedupd = filepath.Join(dir, "dedupd")
		goBuild(t, "../..", b.dedupd, "./cmd/dedupd")
	}
	goBuild(t, ".", b.chain, ".")
	return b
}

func goBuild(t *testing.T, dir, out, pkg string) {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build %s (in %s): %v", pkg, dir, err)
	}
}

// figures are what a run counts, from the lines the processes print.
type figures struct {
	mu          sync.Mutex
	kills       map[string]int            // crash point → SIGKILLs there
	restarts    map[string]int            // role → restarts after a kill
	orders      int                       // orders committed (reported)
	publishes   map[string]map[string]int // queue → event id → publishes
	nacked      int                       // publishes the broker refused
	deliveries  map[string]map[string]int // stage → event id → deliveries
	redelivered map[string]int            // stage → deliveries flagged redelivered
	outcomes    map[string]map[string]int // stage → Do outcome → count
	logs        strings.Builder
}

func newFigures() *figures {
	return &figures{kills: map[string]int{}, restarts: map[string]int{}, publishes: map[string]map[string]int{},
		deliveries: map[string]map[string]int{}, redelivered: map[string]int{}, outcomes: map[string]map[string]int{}}
}

func bump(m map[string]map[string]int, outer, inner string) {
	if m[outer] == nil {
		m[outer] = map[string]int{}
	}
	m[outer][inner]++
}

// read parses one process's stdout.
func (f *figures) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) < 2 {
			continue
		}
		f.mu.Lock()
		switch {
		case fl[0] == "kill":
			f.kills[fl[1]]++
		case fl[0] == "order":
			f.orders++
		case fl[0] == "publish" && len(fl) == 3:
			bump(f.publishes, fl[1], fl[2])
		case fl[0] == "nacked":
			f.nacked++
		case fl[0] == "deliver" && len(fl) == 4:
			bump(f.deliveries, fl[1], fl[2])
			if fl[3] == "true" {
				f.redelivered[fl[1]]++
			}
		case fl[0] == "outcome" && len(fl) == 4:
			bump(f.outcomes, fl[1], fl[3])
		}
		f.mu.Unlock()
	}
}

// total sums m's counts; distinct counts its keys.
func total(m map[string]int) (sum, distinct int) {
	for _, n := range m {
		sum += n
	}
	return sum, len(m)
}

// supervisor keeps slots processes of one role running, restarting each
// one a crash point killed, until stop. A process that exits 0 is done
// (the producer when every order is placed; any role after SIGTERM).
type supervisor struct {
	role  string
	bin   string
	args  []string
	env   []string
	slots int
	fig   *figures

	mu       sync.Mutex
	cur      map[int]*exec.Cmd
	stopping bool
	finished int
	wg       sync.WaitGroup
}

func (s *supervisor) start(t *testing.T) {
	s.cur = map[int]*exec.Cmd{}
	for slot := range s.slots {
		s.wg.Go(func() { s.loop(t, slot) })
	}
}

func (s *supervisor) loop(t *testing.T, slot int) {
	for {
		cmd := exec.Command(s.bin, s.args...)
		cmd.Env = append(os.Environ(), s.env...)
		cmd.Stderr = &logWriter{f: s.fig, prefix: s.role}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Error(err)
			return
		}
		s.mu.Lock()
		if s.stopping {
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
		stopping := s.stopping
		s.mu.Unlock()
		signal := syscall.Signal(0)
		if exit, ok := errors.AsType[*exec.ExitError](err); ok {
			signal = exit.Sys().(syscall.WaitStatus).Signal()
		}
		switch {
		case err == nil:
			s.mu.Lock()
			s.finished++
			s.mu.Unlock()
			return
		case stopping && signal == syscall.SIGTERM:
			return // stopped before its handler was installed
		case signal == syscall.SIGKILL:
			s.fig.mu.Lock()
			s.fig.restarts[s.role]++
			s.fig.mu.Unlock()
		default:
			t.Errorf("%s exited unexpectedly: %v", s.role, err)
			return
		}
	}
}

// done says whether every process of the role exited 0.
func (s *supervisor) done() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.finished == s.slots
}

// stop asks every process to finish what it holds and exit (SIGTERM),
// and waits for them.
func (s *supervisor) stop() {
	s.mu.Lock()
	s.stopping = true
	for _, cmd := range s.cur {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// logWriter collects the processes' logs, capped, for failure reports.
type logWriter struct {
	f      *figures
	prefix string
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	if w.f.logs.Len() < 64<<10 {
		fmt.Fprintf(&w.f.logs, "[%s] %s", w.prefix, p)
	}
	return len(p), nil
}
