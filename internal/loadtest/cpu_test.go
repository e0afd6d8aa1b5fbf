package loadtest

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// A stat line as proc(5) lays it out, with a command name that holds a
// space and parentheses; the wanted numbers are read off it by hand.
func TestParseProcStat(t *testing.T) {
	line := "4242 (postgres: a (b) c) S 6867 4242 4242 0 -1 4194560 120 0 0 0 1234 567 89 10 20 0 1 0 12350 237301760 9988 18446744073709551615\n"
	got, err := parseProcStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := procTimes{pid: 4242, ppid: 6867, utime: 1234, stime: 567, cutime: 89, cstime: 10}
	if got != want {
		t.Fatalf("parsed %+v, want %+v", got, want)
	}
	for _, bad := range []string{"", "12 no-parens S 1", "x (a) S 1 2", "7 (a) S 1 2 3"} {
		if _, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("%q parsed without error", bad)
		}
	}
}

// fakeProc is a /proc with a stat file per process.
type fakeProc string

func (p fakeProc) set(t *testing.T, pid, ppid int, utime, stime, cutime, cstime int64) {
	t.Helper()
	dir := filepath.Join(string(p), strconv.Itoa(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	line := strconv.Itoa(pid) + " (postgres) S " + strconv.Itoa(ppid) + " 1 1 0 -1 0 0 0 0 0 " +
		strconv.FormatInt(utime, 10) + " " + strconv.FormatInt(stime, 10) + " " +
		strconv.FormatInt(cutime, 10) + " " + strconv.FormatInt(cstime, 10) + " 20 0 1 0\n"
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (p fakeProc) exit(t *testing.T, pid int) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(string(p), strconv.Itoa(pid))); err != nil {
		t.Fatal(err)
	}
}

// A backend that exits between two samples is counted once, through the
// postmaster's reaped children; an unrelated process and dedupd's children
// are not the database's; the shares come out per operation in µs.
func TestServerCPUAccounting(t *testing.T) {
	proc := fakeProc(t.TempDir())
	const dedupd, postmaster, backendA, backendB, other, redis = 100, 200, 201, 202, 300, 400
	proc.set(t, dedupd, 1, 500, 100, 0, 0)
	proc.set(t, redis, 1, 700, 100, 0, 0)
	proc.set(t, postmaster, 1, 10, 5, 40, 20)
	proc.set(t, backendA, postmaster, 300, 100, 0, 0)
	proc.set(t, backendB, postmaster, 50, 50, 0, 0)
	proc.set(t, other, 1, 9000, 9000, 0, 0)
	s := cpuSampler{proc: string(proc), dedupdPID: dedupd, postmasterPID: postmaster, redisPID: redis}
	before, err := s.sample()
	if err != nil {
		t.Fatal(err)
	}
	// By hand: dedupd 500+100; database 10+5+40+20 + 300+100 + 50+50;
	// Redis 700+100.
	if want := (cpuSample{dedupd: 600, database: 575, redis: 800}); before.dedupd != want.dedupd || before.database != want.database ||
		before.redis != want.redis {
		t.Fatalf("before: %+v, want %+v", before, want)
	}

	// Meanwhile: dedupd runs 200 ticks; backend A runs 100 more and exits,
	// so its 500 move into the postmaster's cutime/cstime (400+100); B runs
	// 20; a new backend C runs 30; the postmaster itself 5; other 1000;
	// Redis runs 70 and reaps an AOF rewrite that ran 40.
	proc.set(t, dedupd, 1, 650, 150, 0, 0)
	proc.set(t, redis, 1, 750, 120, 30, 10)
	proc.exit(t, backendA)
	proc.set(t, postmaster, 1, 12, 8, 440, 120)
	proc.set(t, backendB, postmaster, 60, 60, 0, 0)
	proc.set(t, 203, postmaster, 25, 5, 0, 0)
	proc.set(t, other, 1, 9500, 9500, 0, 0)
	after, err := s.sample()
	if err != nil {
		t.Fatal(err)
	}
	// Database delta: A 100 + B 20 + C 30 + postmaster 5 = 155 ticks.
	if want := (cpuSample{dedupd: 800, database: 575 + 155}); after.dedupd != want.dedupd || after.database != want.database {
		t.Fatalf("after: %+v, want %+v", after, want)
	}

	// 200, 155 and 110 ticks of 10 ms over 1,000 ops: 2,000, 1,550 and
	// 1,100 µs per op.
	for _, c := range []struct {
		side    string
		counted share
		micros  float64
	}{{"dedupd", dedupdAndDatabase, 3550}, {"baseline", databaseOnly, 1550}, {"redis", redisOnly, 1100}} {
		got := perOp(before, after, 1000, c.counted)
		if want := (ServerCPU{Micros: c.micros, DedupdMicros: 2000, DatabaseMicros: 1550, RedisMicros: 1100}); *got != want {
			t.Errorf("%s side: %+v, want %+v", c.side, *got, want)
		}
	}
	if perOp(before, after, 0, dedupdAndDatabase) != nil {
		t.Error("CPU per op of no operations")
	}
}

// Counting only the run's database processes: the postmaster's own time,
// the listed backends' (one that starts meanwhile counts from zero), and
// nothing of another database's backend or of the reaped children.
func TestServerCPUOfTheRunsProcesses(t *testing.T) {
	proc := fakeProc(t.TempDir())
	const postmaster, ours, walwriter, theirs, newcomer = 200, 201, 202, 203, 204
	proc.set(t, postmaster, 1, 10, 5, 40, 20)
	proc.set(t, ours, postmaster, 300, 100, 0, 0)
	proc.set(t, walwriter, postmaster, 20, 20, 0, 0)
	proc.set(t, theirs, postmaster, 1000, 1000, 0, 0)
	listed := []int{ours, walwriter}
	s := cpuSampler{proc: string(proc), postmasterPID: postmaster,
		databasePIDs: func() ([]int, error) { return listed, nil }}
	before, err := s.sample()
	if err != nil {
		t.Fatal(err)
	}
	proc.set(t, postmaster, 1, 11, 5, 900, 900)      // +1 own; reaped children ignored
	proc.set(t, ours, postmaster, 350, 110, 0, 0)    // +60
	proc.set(t, walwriter, postmaster, 25, 20, 0, 0) // +5
	proc.set(t, theirs, postmaster, 5000, 5000, 0, 0)
	proc.set(t, newcomer, postmaster, 7, 3, 0, 0) // +10, all of it
	listed = append(listed, newcomer)
	after, err := s.sample()
	if err != nil {
		t.Fatal(err)
	}
	if got := databaseDelta(before, after); got != 76 {
		t.Fatalf("database delta %d ticks, want 1 + 60 + 5 + 10 = 76", got)
	}
	// 76 ticks of 10 ms over 100 ops: 7,600 µs per op.
	if got := perOp(before, after, 100, databaseOnly); got.DatabaseMicros != 7600 || got.Micros != 7600 {
		t.Errorf("per op: %+v, want 7600 µs", *got)
	}
}

// The ratio and the cost above the floor are computed from the sides'
// figures: 90 µs against 60 µs is 1.5x; 90 over a floor of 20 is 70.
func TestReportComparesCPU(t *testing.T) {
	r := Report{Scenarios: []ScenarioReport{
		{Name: "floor", Service: Measurement{CPU: &ServerCPU{Micros: 20}}},
		{Name: "claim-new", Service: Measurement{CPU: &ServerCPU{Micros: 90}}},
	}}
	compareWithFloor(r.Scenarios)
	if got := r.Scenarios[1].AboveFloorMicros; got != 70 {
		t.Errorf("above floor: %v, want 70", got)
	}
	if got := r.Scenarios[0].AboveFloorMicros; got != 0 {
		t.Errorf("the floor above itself: %v, want 0", got)
	}
	if got := cpuRatio(&ServerCPU{Micros: 90}, &ServerCPU{Micros: 60}); got != 1.5 {
		t.Errorf("ratio: %v, want 1.5", got)
	}
	if got := cpuRatio(&ServerCPU{Micros: 90}, nil); got != 0 {
		t.Errorf("ratio without a baseline figure: %v, want 0", got)
	}
}
