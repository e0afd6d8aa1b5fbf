package loadtest

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startRedis starts a redis-server of the test's own, on a free port of
// loopback with a directory of its own, as docs/performance.md says to run
// the baseline: append-only, synced on every write. It returns its URL and
// pid. Without redis-server the test is skipped, except under CI.
func startRedis(t *testing.T) (url string, pid int) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server not found, and CI runs the Redis baseline: %v", err)
		}
		t.Skipf("redis-server not installed: %v", err)
	}
	// A port found free may be taken before Redis binds it: try again.
	for range 5 {
		if url, pid, ok := tryRedis(t, bin); ok {
			return url, pid
		}
	}
	t.Fatal("redis-server did not start in 5 attempts")
	return "", 0
}

func tryRedis(t *testing.T, bin string) (url string, pid int, ok bool) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(lis.Addr().(*net.TCPAddr).Port)
	_ = lis.Close() // free again, for Redis
	dir := t.TempDir()
	log, err := os.Create(filepath.Join(dir, "redis.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--dir", dir, "--appendonly", "yes",
		"--appendfsync", "always", "--save", "", "--daemonize", "no")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() { _ = cmd.Process.Kill(); <-exited }
	url = "redis://127.0.0.1:" + port
	client := newTestRedisClient(t, url)
	// Ready once it answers; given up on if it exits (its port was taken).
	for range 400 {
		select {
		case <-exited:
			out, _ := os.ReadFile(log.Name())
			t.Logf("redis-server on %s exited:\n%s", port, out)
			return "", 0, false
		default:
		}
		if client.Ping(context.Background()).Err() == nil {
			t.Cleanup(stop)
			return url, cmd.Process.Pid, true
		}
		time.Sleep(25 * time.Millisecond)
	}
	stop()
	t.Fatalf("redis-server on %s never answered", port)
	return "", 0, false
}

func newTestRedisClient(t *testing.T, url string) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// redisKeys returns the keys matching pattern and their values.
func redisKeys(t *testing.T, client *redis.Client, pattern string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	iter := client.Scan(ctx, 0, pattern, 1000).Iterator()
	for iter.Next(ctx) {
		v, err := client.Get(ctx, iter.Val()).Result()
		if err != nil {
			t.Fatal(err)
		}
		out[iter.Val()] = v
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The Redis baseline runs each key scenario for its exact count, and what
// it counted is what Redis holds afterwards, read back with a client of
// the test's own: a key under lease (and that lease's expiry) for each new
// claim, the result for each cycle and each replayed key. Scenarios it has
// no form for get no Redis row; Redis's CPU is its own process's; a run
// that keeps nothing deletes its keys.
func TestRedisBaseline(t *testing.T) {
	url, pid := startRedis(t)
	addr, _ := startService(t)
	client := newTestRedisClient(t, url)
	const count, replayKeys = 300, 40
	wantResult := "rrrrrrrrrrrrrrrr" // 16 bytes, by hand
	report, err := Run(context.Background(), Config{Addr: addr, BaselineRedisURL: url, RedisPID: pid, KeepRecords: true,
		Concurrency: 8, Count: count, ReplayKeys: replayKeys, ContendedKeys: 2, ResultBytes: len(wantResult),
		Scenarios: []string{"claim-new", "cycle", "replay", "contended", "stream-cycle"}})
	if err != nil {
		t.Fatal(err)
	}
	if !report.Redis || report.RedisPID != pid || report.Baseline {
		t.Errorf("report: redis %v pid %d (%s), PostgreSQL baseline %v; want Redis's pid %d only",
			report.Redis, report.RedisPID, report.CPUNote, report.Baseline, pid)
	}
	bySet := map[string]*Measurement{}
	for _, s := range report.Scenarios {
		if s.Name == "stream-cycle" {
			if s.Redis != nil {
				t.Error("stream-cycle ran on Redis")
			}
			continue
		}
		m := s.Redis
		if m == nil {
			t.Fatalf("%s: no Redis row", s.Name)
		}
		bySet[s.Name] = m
		if m.Ops != count || m.Errors != 0 {
			t.Errorf("%s on Redis: %d ops, %d errors (%s); want %d and none", s.Name, m.Ops, m.Errors, m.FirstError, count)
		}
		if m.CPU == nil || m.CPU.Micros != m.CPU.RedisMicros || m.CPU.RedisMicros < 0 {
			t.Errorf("%s on Redis: server CPU %+v, want Redis's alone", s.Name, m.CPU)
		}
		if want := s.Service.PerSecond / m.PerSecond; s.RedisRatio != want {
			t.Errorf("%s: ratio to Redis %v, want %v", s.Name, s.RedisRatio, want)
		}
	}

	prefix := redisKeyPrefix(BenchConsumer, report.RunID)
	ctx := context.Background()
	for _, c := range []struct {
		kind, value string
		n           int64
		ttlAbove    time.Duration // the completed TTL is far above the lease
		ttlAtMost   time.Duration
	}{
		{"new-", redisPending, bySet["claim-new"].Ops, 0, 30 * time.Second},
		{"cycle-", wantResult, bySet["cycle"].Ops, 30 * time.Second, 24 * time.Hour},
		{"replay-", wantResult, replayKeys, 30 * time.Second, 24 * time.Hour},
	} {
		keys := redisKeys(t, client, prefix+c.kind+"*")
		if int64(len(keys)) != c.n {
			t.Errorf("%s*: %d keys in Redis, the run counted %d", c.kind, len(keys), c.n)
		}
		for k, v := range keys {
			if v != c.value {
				t.Fatalf("%s = %q, want %q", k, v, c.value)
			}
			ttl, err := client.PTTL(ctx, k).Result()
			if err != nil || ttl <= c.ttlAbove || ttl > c.ttlAtMost {
				t.Fatalf("%s expires in %v (%v), want in (%v, %v]", k, ttl, err, c.ttlAbove, c.ttlAtMost)
			}
		}
	}
	// A replay answers the stored value, the result written by hand above.
	got, err := (&redisBaseline{client: client, prefix: prefix}).claim(ctx, keyOf("replay", 7))
	if err != nil || got.outcome != Completed || !bytes.Equal(got.result, []byte(wantResult)) {
		t.Errorf("replay on Redis: %+v, %v; want COMPLETED with %q", got, err, wantResult)
	}

	var table bytes.Buffer
	if err := report.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{" redis ", "vs columns are dedupd's throughput and CPU per op over Redis's", "Redis pid " + strconv.Itoa(pid)} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}

	// Without KeepRecords a run deletes its keys.
	report, err = Run(context.Background(), Config{Addr: addr, BaselineRedisURL: url, Concurrency: 2, Count: 20,
		ReplayKeys: 5, Scenarios: []string{"cycle", "replay"}})
	if err != nil {
		t.Fatal(err)
	}
	if left := redisKeys(t, client, redisKeyPrefix(BenchConsumer, report.RunID)+"*"); len(left) != 0 {
		t.Errorf("%d keys left after a run that keeps nothing", len(left))
	}
}
