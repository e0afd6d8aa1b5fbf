package loadtest

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
)

// Config is one bench run.
type Config struct {
	// Addr is the dedupd gRPC address, host:port.
	Addr string
	// BaselineDatabaseURL, when set, is the PostgreSQL the hand-written
	// baseline runs on: the database dedupd uses, for a fair comparison.
	BaselineDatabaseURL string
	// BaselineRedisURL, when set, is the Redis the scenarios that only
	// claim, complete and release run on as well (redis.go).
	BaselineRedisURL string
	// RedisPID, when set, is the local Redis server whose CPU time is
	// reported on the Redis rows.
	RedisPID int
	// Scenarios to run, in order; empty means all of Scenarios().
	Scenarios []string
	// Concurrency is the number of callers.
	Concurrency int
	// Duration bounds each scenario's run on each side, unless Count is set.
	Duration time.Duration
	// Count, when positive, runs exactly this many operations per scenario
	// on each side instead.
	Count int64
	// Rate, when positive, paces the operations to this many per second
	// in total (an open loop): operation i is due at i/Rate after the
	// start, and its latency is counted from when it was due, so a service
	// that falls behind is charged for the wait too.
	Rate float64
	// ReplayKeys is how many completed keys replay claims cycle through.
	ReplayKeys int
	// ContendedKeys is how many keys the contended scenario shares.
	ContendedKeys int
	// ResultBytes is the size of each stored result.
	ResultBytes int
	// BatchSize is the keys per call of the batch scenarios (batch.go).
	BatchSize int
	// Progress, when set, gets a progress line per second.
	Progress io.Writer
	// ServerPID, when set, is the local dedupd process whose peak resident
	// memory and CPU time are reported.
	ServerPID int
	// PostmasterPID, when set, is the local PostgreSQL server whose CPU
	// time (its own and its children's) is reported. Zero finds it from
	// the baseline database when that runs on this machine.
	PostmasterPID int
	// WholeDatabaseServer counts every process of the PostgreSQL server,
	// live or exited, as the database's share; otherwise only the
	// processes that serve the run's database and the server's shared
	// helpers are (the only fair count on a server that others use too).
	WholeDatabaseServer bool
	// MaxConsecutiveErrors stops the run when this many operations in a row
	// (across all callers) have failed: the server is gone or refuses
	// everything, and hammering it measures nothing. Zero means 100.
	MaxConsecutiveErrors int
	// Consumer is the consumer every dedupd-side key is claimed under; zero
	// means BenchConsumer. Runs share it, so that a run adds no consumer
	// label to the server's metrics; keys carry the run's id.
	Consumer string
	// KeepRecords leaves the run's records on the server, and its keys on
	// the baseline Redis; by default the consumer's records are purged at
	// the end (cleanup.go), and the run's keys deleted.
	KeepRecords bool
	// Direct, when set, is driven in this process instead of dedupd
	// (direct.go): an embedded engine, say. The CPU per operation is then
	// this process's.
	Direct Direct
	// Conn, when set, is the connection to dedupd (with whatever TLS and
	// credentials it was made with) and Addr only names it in the report;
	// otherwise Run dials Addr in plaintext.
	Conn grpc.ClientConnInterface
}

// Scenarios lists the scenario names in their default order.
func Scenarios() []string {
	names := make([]string, len(scenarioTable))
	for i, sc := range scenarioTable {
		names[i] = sc.name
	}
	return names
}

func (c *Config) defaults() error {
	if named, ok := c.Conn.(interface{ Target() string }); ok && c.Addr == "" {
		c.Addr = named.Target()
	}
	if c.Direct != nil && (c.BaselineDatabaseURL != "" || c.BaselineRedisURL != "") {
		return errors.New("loadtest: an engine in process runs no baseline")
	}
	if c.Addr == "" && c.Conn == nil && c.Direct == nil {
		return errors.New("loadtest: no dedupd address")
	}
	if len(c.Scenarios) == 0 {
		c.Scenarios = Scenarios()
		if c.Direct != nil {
			c.Scenarios = slices.DeleteFunc(c.Scenarios, func(s string) bool { sc, _ := scenarioNamed(s); return !sc.keysOnly })
		}
	}
	for _, s := range c.Scenarios {
		if sc, ok := scenarioNamed(s); ok && c.Direct != nil && !sc.keysOnly {
			return fmt.Errorf("loadtest: scenario %s has no in-process form (it needs the service's calls)", s)
		}
	}
	for _, s := range c.Scenarios {
		if !slices.Contains(Scenarios(), s) {
			return fmt.Errorf("loadtest: unknown scenario %q (have %s)", s, strings.Join(Scenarios(), ", "))
		}
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 32
	}
	if c.Count <= 0 && c.Duration <= 0 {
		c.Duration = 10 * time.Second
	}
	if c.ReplayKeys <= 0 {
		c.ReplayKeys = 1000
	}
	if c.ContendedKeys <= 0 {
		c.ContendedKeys = 8
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 100
	}
	if c.ResultBytes < 0 {
		c.ResultBytes = 0
	}
	if c.MaxConsecutiveErrors <= 0 {
		c.MaxConsecutiveErrors = 100
	}
	if c.Consumer == "" {
		c.Consumer = BenchConsumer
	}
	return nil
}
