package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/dedupd/dedupd/internal/testing/pgtest"
	"github.com/dedupd/dedupd/server/api"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pgstore"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// startService serves DedupService on a fresh PostgreSQL schema and returns
// its address and the schema's URL, for the baseline to share.
func startService(t *testing.T) (addr, url string) {
	t.Helper()
	url = pgtest.URL(t)
	ctx := context.Background()
	st, err := pgstore.Open(ctx, url, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	defaults := policy.Defaults{
		Policy: store.Policy{DefaultLeaseTTL: time.Minute, CompletedTTL: time.Hour, RejectedTTL: time.Hour, ReleasedTTL: time.Hour},
		Limits: policy.Limits{MaxLeaseTTL: time.Hour, MaxResultBytes: 1 << 16},
	}
	policies := policy.NewResolvers(st, defaults, time.Hour, time.Minute)
	api.Register(srv, api.NewDedupService(st, policies.Keys, slog.New(slog.DiscardHandler)))
	api.RegisterAdmin(srv, api.NewAdminService(st, policies.Keys, slog.New(slog.DiscardHandler)))
	api.RegisterStreams(srv, api.NewStreamService(st, policies.Streams, slog.New(slog.DiscardHandler)),
		api.NewStreamAdminService(st, policies.Streams, slog.New(slog.DiscardHandler)))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(lis) }() // returns once stopped
	t.Cleanup(srv.Stop)
	return lis.Addr().String(), url
}

// Every scenario runs its exact count on both sides without an error, and
// the report adds up: percentiles in order, a ratio of the two rates.
func TestRunCountsEveryScenarioOnBothSides(t *testing.T) {
	addr, url := startService(t)
	var progress bytes.Buffer
	const count = 200
	// The service runs in this process, so this process is dedupd's pid.
	report, err := Run(context.Background(), Config{Addr: addr, BaselineDatabaseURL: url, ServerPID: os.Getpid(),
		Concurrency: 8, Count: count, ReplayKeys: 50, ContendedKeys: 2, ResultBytes: 16, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Scenarios) != len(Scenarios()) {
		t.Fatalf("%d scenarios reported, want %d", len(report.Scenarios), len(Scenarios()))
	}
	if report.DedupdPID != os.Getpid() || report.PostmasterPID == 0 {
		t.Errorf("sampled pids %d and %d (%s); want this process and the local postmaster",
			report.DedupdPID, report.PostmasterPID, report.CPUNote)
	}
	for _, s := range report.Scenarios {
		if s.Service.CPU == nil || s.Service.CPU.Micros < s.Service.CPU.DedupdMicros || s.Service.CPU.DedupdMicros < 0 {
			t.Errorf("%s: dedupd side's server CPU %+v", s.Name, s.Service.CPU)
		}
		if s.Name == "floor" {
			if s.Baseline != nil {
				t.Errorf("floor has a baseline")
			}
			continue
		}
		if s.Baseline == nil {
			t.Fatalf("%s: no baseline", s.Name)
		}
		if c := s.Baseline.CPU; c == nil || c.Micros != c.DatabaseMicros {
			t.Errorf("%s: the baseline's server CPU %+v counts more than the database", s.Name, c)
		}
		for side, m := range map[string]Measurement{"dedupd": s.Service, "baseline": *s.Baseline} {
			if m.Ops != count || m.Errors != 0 {
				t.Errorf("%s %s: %d ops, %d errors (%s); want %d and 0", s.Name, side, m.Ops, m.Errors, m.FirstError, count)
			}
			if 0 >= m.P50 || m.P50 > m.P90 || m.P90 > m.P99 || m.P99 > m.Max {
				t.Errorf("%s %s: percentiles out of order: %v %v %v %v", s.Name, side, m.P50, m.P90, m.P99, m.Max)
			}
		}
		if want := s.Service.PerSecond / s.Baseline.PerSecond; s.Ratio != want {
			t.Errorf("%s: ratio %v, want %v", s.Name, s.Ratio, want)
		}
	}
	if !strings.Contains(progress.String(), "claim-new dedupd") || !strings.Contains(progress.String(), "mixed baseline") {
		t.Errorf("progress lines missing:\n%s", progress.String())
	}

	var table, js bytes.Buffer
	if err := report.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"scenario", "claim-new", "replay", "baseline", "x", "cpu µs/op", "cpu vs base", "postmaster pid",
		"claim-batch: 100 keys/op", "records deleted at the end"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	for line := range strings.SplitSeq(table.String(), "\n") {
		if n := utf8.RuneCountInString(line); n > TableWidth {
			t.Errorf("a table line is %d columns wide, more than %d:\n%s", n, TableWidth, line)
		}
	}
	// Nothing is left behind: no record of the bench consumer, no table.
	if report.RecordsDeleted == 0 || report.CleanupNote != "" {
		t.Errorf("cleanup deleted %d records (%s)", report.RecordsDeleted, report.CleanupNote)
	}
	if n := recordsOf(t, url, BenchConsumer); n != 0 {
		t.Errorf("%d records of %s left after the run", n, BenchConsumer)
	}
	var left *string
	queryRow(t, url, `SELECT to_regclass($1)::TEXT`, []any{baselineTableName + "_" + report.RunID}, &left)
	if left != nil {
		t.Errorf("the baseline table %s is left after the run", *left)
	}
	if err := report.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Scenarios []struct {
			Name    string `json:"name"`
			Service struct {
				Ops       int64   `json:"ops"`
				P99Ms     float64 `json:"p99_ms"`
				ServerCPU *struct {
					Micros float64 `json:"micros_per_op"`
				} `json:"server_cpu"`
			} `json:"service"`
			Ratio float64 `json:"ratio"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, js.String())
	}
	if len(decoded.Scenarios) != len(Scenarios()) || decoded.Scenarios[1].Service.Ops != count || decoded.Scenarios[1].Ratio <= 0 ||
		decoded.Scenarios[1].Service.ServerCPU == nil {
		t.Errorf("JSON report decodes to %+v", decoded)
	}
}

// A scenario's operations that fail are counted and the first one kept,
// not hidden, and not counted as throughput: here dedupd answers nothing
// but Unavailable.
func TestRunCountsFailures(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens: every call fails
	report, err := Run(context.Background(), Config{Addr: addr, Scenarios: []string{"claim-new"}, Concurrency: 2, Count: 10})
	if err != nil {
		t.Fatal(err)
	}
	m := report.Scenarios[0].Service
	if m.Ops != 0 || m.PerSecond != 0 || m.P50 != 0 || m.Errors != 10 || m.FirstError == "" || report.Scenarios[0].Baseline != nil {
		t.Errorf("report of a dead server: %+v", report.Scenarios[0])
	}
}

func TestConfigRefusesUnknownScenario(t *testing.T) {
	_, err := Run(context.Background(), Config{Addr: "127.0.0.1:1", Scenarios: []string{"claim-old"}})
	if err == nil || !strings.Contains(err.Error(), "claim-old") {
		t.Errorf("unknown scenario: %v", err)
	}
}

// A paced run makes its count of operations and says so in the report.
func TestRunPaced(t *testing.T) {
	addr, _ := startService(t)
	report, err := Run(context.Background(), Config{Addr: addr, Scenarios: []string{"claim-new"},
		Concurrency: 4, Count: 50, Rate: 1000})
	if err != nil {
		t.Fatal(err)
	}
	m := report.Scenarios[0].Service
	if m.Ops != 50 || m.Errors != 0 || report.Rate != 1000 {
		t.Errorf("paced run: %+v, rate %v", m, report.Rate)
	}
	var table bytes.Buffer
	if err := report.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "paced to 1000 ops/s") {
		t.Errorf("table does not say the run was paced:\n%s", table.String())
	}
}

// dedupctl hands Run its connection, which need not say its address.
func TestRunOnAGivenConnection(t *testing.T) {
	addr, _ := startService(t)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var unnamed grpc.ClientConnInterface = struct{ grpc.ClientConnInterface }{conn}
	report, err := Run(context.Background(), Config{Conn: unnamed, Scenarios: []string{"floor"}, Concurrency: 2, Count: 10})
	if err != nil || report.Scenarios[0].Service.Ops != 10 {
		t.Fatalf("run on a given connection: %v, %+v", err, report)
	}
}

// queryRow runs one query on the database at url and scans its row.
func queryRow(t *testing.T, url, sql string, args []any, dest ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, sql, args...).Scan(dest...); err != nil {
		t.Fatal(err)
	}
}

// recordsOf counts the rows of a consumer in dedupd's table.
func recordsOf(t *testing.T, url, consumer string) int64 {
	t.Helper()
	var n int64
	queryRow(t, url, `SELECT count(*) FROM dedup_records WHERE consumer = $1`, []any{consumer}, &n)
	return n
}

// Runs share one consumer, whatever their number, so that the server's
// metrics get one consumer label from bench in all; their keys do not
// collide, and with --keep-records both runs' records stay.
func TestRunsShareOneConsumer(t *testing.T) {
	addr, url := startService(t)
	var runs []string
	for range 2 {
		report, err := Run(context.Background(), Config{Addr: addr, Scenarios: []string{"cycle"}, Concurrency: 2, Count: 20,
			KeepRecords: true})
		if err != nil || report.Scenarios[0].Service.Errors != 0 {
			t.Fatalf("run: %v, %+v", err, report)
		}
		runs = append(runs, report.RunID)
	}
	var consumers, records int64
	queryRow(t, url, `SELECT count(DISTINCT consumer), count(*) FROM dedup_records`, nil, &consumers, &records)
	if consumers != 1 || records != 40 || recordsOf(t, url, BenchConsumer) != 40 {
		t.Errorf("after runs %v: %d consumers, %d records; want 1 (%s) and 40", runs, consumers, records, BenchConsumer)
	}
	// A run's cleanup purges the consumer, leftovers of earlier runs too.
	if _, err := Run(context.Background(), Config{Addr: addr, Scenarios: []string{"floor"}, Concurrency: 1, Count: 1}); err != nil {
		t.Fatal(err)
	}
	if n := recordsOf(t, url, BenchConsumer); n != 0 {
		t.Errorf("%d records left after a run that cleans up", n)
	}
}

// Against a server that is gone, each caller backs off and the run stops
// after MaxConsecutiveErrors failures in a row, with an error that says so
// and the count it reached: not hundreds of thousands of calls.
func TestRunGivesUpOnAServerThatIsGone(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	const limit, callers = 20, 4
	report, err := Run(context.Background(), Config{Addr: addr, Scenarios: []string{"claim-new", "cycle"},
		Concurrency: callers, Duration: time.Hour, MaxConsecutiveErrors: limit})
	if !errors.Is(err, errGaveUp) || !strings.Contains(err.Error(), "20 operations in a row failed") {
		t.Fatalf("Run against a dead server: %v", err)
	}
	if len(report.Scenarios) != 1 {
		t.Fatalf("%d scenarios reported, want the one that gave up", len(report.Scenarios))
	}
	// The limit is reached by one caller; the others finish the call they
	// are in, so at most callers-1 more fail.
	if m := report.Scenarios[0].Service; m.Errors < limit || m.Errors > limit+callers-1 || m.GaveUpAfter != limit || m.LastError == "" {
		t.Errorf("gave up with %d errors (%+v), want %d to %d", m.Errors, m, limit, limit+callers-1)
	}
	if report.CleanupNote == "" {
		t.Errorf("the cleanup against a dead server reports no failure")
	}
}

// The waits after failures in a row grow from about 10ms to at most 1s,
// each within ±50% of its step.
func TestFailureBackoff(t *testing.T) {
	b := failureBackoff()
	step := 10 * time.Millisecond
	for i := range 12 {
		d := b.NextBackOff()
		if d < step/2 || d > step*3/2 {
			t.Errorf("wait %d = %v, want within 50%% of %v", i, d, step)
		}
		step = min(2*step, time.Second)
	}
	b.Reset()
	if d := b.NextBackOff(); d > 15*time.Millisecond {
		t.Errorf("after a success the wait is %v, want about 10ms", d)
	}
}
