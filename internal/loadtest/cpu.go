package loadtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Server CPU is read from Linux's /proc: utime and stime of a process are
// what its threads have run so far, and cutime and cstime what its children
// ran before they exited and it reaped them. The times are in clock ticks of
// USER_HZ, which the kernel fixes at 100 per second for every process it
// reports to (sysconf(_SC_CLK_TCK)); Go cannot ask sysconf without cgo.
const clockTicksPerSecond = 100

// procTimes is one process's line of /proc/PID/stat, the fields we use.
type procTimes struct {
	pid, ppid                    int
	utime, stime, cutime, cstime int64 // clock ticks
}

// parseProcStat reads a /proc/PID/stat line. The command name, field 2, is
// in parentheses and may hold spaces and parentheses itself, so the fields
// are counted from its last closing parenthesis: state is field 3, ppid 4,
// utime 14, stime 15, cutime 16, cstime 17 (proc(5)).
func parseProcStat(line []byte) (procTimes, error) {
	open, closing := bytes.IndexByte(line, '('), bytes.LastIndexByte(line, ')')
	if open < 1 || closing < open {
		return procTimes{}, fmt.Errorf("no command name in %.40q", line)
	}
	var p procTimes
	pid, err := strconv.Atoi(string(bytes.TrimSpace(line[:open])))
	if err != nil {
		return procTimes{}, fmt.Errorf("pid: %w", err)
	}
	p.pid = pid
	rest := bytes.Fields(line[closing+1:]) // rest[0] is field 3
	field := func(n int) (int64, error) {
		if n-3 >= len(rest) {
			return 0, fmt.Errorf("stat line has %d fields, want %d", len(rest)+2, n)
		}
		return strconv.ParseInt(string(rest[n-3]), 10, 64)
	}
	var ppid int64
	for _, f := range []struct {
		n   int
		dst *int64
	}{{4, &ppid}, {14, &p.utime}, {15, &p.stime}, {16, &p.cutime}, {17, &p.cstime}} {
		if *f.dst, err = field(f.n); err != nil {
			return procTimes{}, fmt.Errorf("field %d: %w", f.n, err)
		}
	}
	p.ppid = int(ppid)
	return p, nil
}

// cpuSample is the CPU time the server side had used at one moment, in
// clock ticks: dedupd's process, the database's, and Redis's. When only
// some of the database's processes are counted, perPID holds each one's.
type cpuSample struct {
	dedupd, database, redis int64
	perPID                  map[int]int64
}

// databaseDelta is the database's CPU time between two samples. Counted
// per process, it is each process's time since before (all of it for one
// that started meanwhile); one that exited meanwhile is missed.
func databaseDelta(before, after cpuSample) int64 {
	if after.perPID == nil {
		return after.database - before.database
	}
	var n int64
	for pid, ticks := range after.perPID {
		n += ticks - before.perPID[pid]
	}
	return n
}

// databaseTicks is what a database server made of a postmaster and its
// children has run: every live process's own time, plus the postmaster's
// reaped children, so that a backend that exits still counts. Nothing is
// counted twice: a process is either alive (its own times) or reaped (in
// the postmaster's cutime/cstime), never both, provided the postmaster's
// line was read before the children's (see sampler.sample).
func databaseTicks(postmaster procTimes, children []procTimes) int64 {
	n := postmaster.utime + postmaster.stime + postmaster.cutime + postmaster.cstime
	for _, c := range children {
		n += c.utime + c.stime
	}
	return n
}

// cpuSampler samples the server side's CPU time. Zero pids are left out.
type cpuSampler struct {
	proc          string // "/proc", or a test's copy
	dedupdPID     int
	postmasterPID int
	// redisPID is a Redis server: one process, whose reaped children (the
	// forks that rewrite its append-only file) count as its own.
	redisPID int
	// databasePIDs, when set, lists the database processes that serve this
	// run (see runDatabasePIDs); only they and the postmaster itself are
	// counted. Unset, the whole database server is: every child of the
	// postmaster, live or reaped.
	databasePIDs func() ([]int, error)
}

// sample reads the current times. The postmaster is read first: a backend
// reaped after that read is then missed (a few ticks too few) rather than
// found both in the postmaster's reaped total and alive (counted twice).
func (s cpuSampler) sample() (cpuSample, error) {
	var out cpuSample
	if s.dedupdPID > 0 {
		p, err := s.read(s.dedupdPID)
		if err != nil {
			return out, err
		}
		out.dedupd = p.utime + p.stime
	}
	if s.redisPID > 0 {
		p, err := s.read(s.redisPID)
		if err != nil {
			return out, err
		}
		out.redis = p.utime + p.stime + p.cutime + p.cstime
	}
	if s.postmasterPID > 0 && s.databasePIDs != nil {
		return out, s.sampleProcesses(&out)
	}
	if s.postmasterPID > 0 {
		pm, err := s.read(s.postmasterPID)
		if err != nil {
			return out, err
		}
		children, err := s.children(s.postmasterPID)
		if err != nil {
			return out, err
		}
		out.database = databaseTicks(pm, children)
	}
	return out, nil
}

// sampleProcesses reads the postmaster's own time and that of each
// database process the run uses.
func (s cpuSampler) sampleProcesses(out *cpuSample) error {
	pids, err := s.databasePIDs()
	if err != nil {
		return err
	}
	out.perPID = map[int]int64{}
	for _, pid := range append(pids, s.postmasterPID) {
		if p, err := s.read(pid); err == nil {
			out.perPID[pid] = p.utime + p.stime
			out.database += p.utime + p.stime
		}
	}
	return nil
}

func (s cpuSampler) read(pid int) (procTimes, error) {
	line, err := os.ReadFile(filepath.Join(s.proc, strconv.Itoa(pid), "stat"))
	if err != nil {
		return procTimes{}, err
	}
	return parseProcStat(line)
}

// children lists the live children of pid. A process that exits while the
// directory is read is skipped: its time is then in pid's reaped total, or
// soon will be.
func (s cpuSampler) children(pid int) ([]procTimes, error) {
	entries, err := os.ReadDir(s.proc)
	if err != nil {
		return nil, err
	}
	var out []procTimes
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil || child == pid {
			continue
		}
		p, err := s.read(child)
		if err != nil || p.ppid != pid {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// ServerCPU is the CPU time the server side spent on one side of one
// scenario, per operation attempted (succeeded or failed), in microseconds.
type ServerCPU struct {
	// Micros is what counts as this side's server CPU: dedupd plus the
	// database for dedupd's side, the database alone for the baseline's,
	// Redis alone for Redis's.
	Micros float64 `json:"micros_per_op"`
	// DedupdMicros, DatabaseMicros and RedisMicros are the shares. On a
	// baseline's side DedupdMicros is what an idle dedupd spent meanwhile
	// (health pings, the reaper), shown but not counted.
	DedupdMicros   float64 `json:"dedupd_micros_per_op"`
	DatabaseMicros float64 `json:"database_micros_per_op"`
	RedisMicros    float64 `json:"redis_micros_per_op,omitempty"`
}

// share says whose CPU counts as a side's server CPU.
type share int

const (
	dedupdAndDatabase share = iota // dedupd's side
	databaseOnly                   // the PostgreSQL baseline's
	redisOnly                      // the Redis baseline's
)

// perOp divides the CPU used between two samples by the operations done
// meanwhile; counted says which shares make up Micros.
func perOp(before, after cpuSample, ops int64, counted share) *ServerCPU {
	if ops <= 0 {
		return nil
	}
	micros := func(ticks int64) float64 {
		return float64(ticks) * float64(time.Second/time.Microsecond) / clockTicksPerSecond / float64(ops)
	}
	c := &ServerCPU{DedupdMicros: micros(after.dedupd - before.dedupd),
		DatabaseMicros: micros(databaseDelta(before, after)), RedisMicros: micros(after.redis - before.redis)}
	switch counted {
	case dedupdAndDatabase:
		c.Micros = c.DedupdMicros + c.DatabaseMicros
	case databaseOnly:
		c.Micros = c.DatabaseMicros
	case redisOnly:
		c.Micros = c.RedisMicros
	}
	return c
}

// findPostmaster returns the pid of the PostgreSQL server behind a pool:
// the parent of the backend serving one of the pool's connections. Only a
// server on this machine can be found so; procRoot is where /proc is.
func findPostmaster(ctx context.Context, pool *pgxpool.Pool, procRoot string) (int, error) {
	var backend int
	if err := pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return 0, err
	}
	p, err := cpuSampler{proc: procRoot}.read(backend)
	if errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("backend %d is not a process on this machine: is PostgreSQL remote?", backend)
	}
	if err != nil {
		return 0, err
	}
	return p.ppid, nil
}

// runDatabasePIDs lists the PostgreSQL processes that work for this run:
// the backends connected to its database (dedupd's and the baseline's
// pools, and autovacuum there) and the server's shared helpers (WAL writer,
// checkpointer, background writer...), which are not connected to any
// database. Left out are backends of other databases: on a shared machine,
// other people's work.
func runDatabasePIDs(ctx context.Context, pool *pgxpool.Pool) func() ([]int, error) {
	return func() ([]int, error) {
		rows, err := pool.Query(ctx, `SELECT pid FROM pg_stat_activity
WHERE datname = current_database() OR (datname IS NULL AND backend_type <> 'client backend')`)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, pgx.RowTo[int])
	}
}
