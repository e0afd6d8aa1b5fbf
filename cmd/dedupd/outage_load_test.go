package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dedupd/dedupd/internal/testing/pgtest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

const (
	outageWorkers  = 16
	outageDeadline = 2 * time.Second
	// outageMargin is how far past its deadline a call may return: the
	// time for a refusal to travel back, under -race on a machine as busy
	// as CI gets (seconds, with 8 jobs on 2 cores). It bounds hangs, a
	// server that ignores deadlines; it is no speed target.
	outageMargin = 30 * time.Second
	// outageLength is how long the database stays cut: a few deadlines,
	// so that calls queued behind the outage must give up.
	outageLength = 3 * outageDeadline
	// outageRecovery bounds how long the test waits for the server to
	// answer again by itself: a server that never does fails, a slow
	// machine does not (the time taken is logged, not judged).
	outageRecovery = 2 * time.Minute
	// goroutineSlack is how many goroutines the server may hold above its
	// count under the same load before the outage. Each caller has one
	// call in flight at a time, so a server that does not pile up stays
	// within a few goroutines per caller.
	goroutineSlack = 4*outageWorkers + 32
)

// TestDatabaseOutageUnderLoad cuts PostgreSQL away (through a proxy) while
// callers claim and complete keys, then restores it. During the outage
// every call must fail with UNAVAILABLE within its deadline (plus a
// margin), never hang or fail otherwise; the server's goroutine count must
// not pile up; and once the database is back the same server process must
// answer again by itself.
func TestDatabaseOutageUnderLoad(t *testing.T) {
	direct := pgtest.URL(t)
	if out, err := runDedupd(t, "migrate", "--database-url", direct); err != nil {
		t.Fatalf("dedupd migrate: %v\n%s", err, out)
	}
	u, err := url.Parse(direct)
	if err != nil || u.Host == "" {
		t.Fatalf("this test reroutes a postgres:// URL through a proxy; got %q (%v)", direct, err)
	}
	proxy := startProxy(t, u.Host)
	u.Host = proxy.addr
	srv := startDedupd(t, "--database-url", u.String(), "--metrics-listen", "127.0.0.1:0")
	if srv.MetricsAddr == "" {
		t.Fatalf("dedupd serves no metrics address; logs:\n%s", srv.Logs)
	}
	load := startOutageLoad(dedupv1.NewDedupServiceClient(srv.dial(t)))
	defer load.stop()

	load.waitForOK(t, 100, outageRecovery)
	before := scrapeMetric(t, srv.MetricsAddr, "go_goroutines")

	proxy.cut()
	cutAt := time.Now()
	load.resetCounts()
	peak := before
	for time.Since(cutAt) < outageLength {
		peak = max(peak, scrapeMetric(t, srv.MetricsAddr, "go_goroutines"))
		time.Sleep(100 * time.Millisecond)
	}
	during := load.resetCounts()

	proxy.listen(t, proxy.addr)
	restoredAt := time.Now()
	load.waitForOK(t, 1, outageRecovery)
	t.Logf("answering again %s after the database returned", time.Since(restoredAt).Round(time.Millisecond))
	load.waitForOK(t, 100, outageRecovery)
	after := scrapeMetric(t, srv.MetricsAddr, "go_goroutines")
	load.stop()

	t.Logf("during the outage: %v; goroutines before %v, peak %v, after %v", during, before, peak, after)
	if during[codes.Unavailable] == 0 {
		t.Fatalf("no call failed with UNAVAILABLE during the outage (%v); the test proves nothing", during)
	}
	if peak > before+goroutineSlack || after > before+goroutineSlack {
		t.Errorf("goroutines piled up: %v before the outage, peak %v, %v after; allowed %d more", before, peak, after, goroutineSlack)
	}
	load.check(t)
	srv.stop(t)
}

// outageLoad runs claim/complete cycles on fresh keys and checks each
// call's answer and time as it returns.
type outageLoad struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	ok     atomic.Int64
	mu     sync.Mutex
	codes  map[codes.Code]int
	bad    []string // calls that broke the promise
}

func startOutageLoad(c dedupv1.DedupServiceClient) *outageLoad {
	ctx, cancel := context.WithCancel(context.Background())
	l := &outageLoad{cancel: cancel, codes: map[codes.Code]int{}}
	for w := range outageWorkers {
		l.wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				key := fmt.Sprintf("outage-%d-%d", w, i)
				got, err := l.call("Claim", func(ctx context.Context) (*dedupv1.ClaimResponse, error) {
					return c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: consumer, Key: key})
				})
				if err != nil {
					time.Sleep(10 * time.Millisecond) // a caller backs off after a refusal
					continue
				}
				_, _ = l.call("Complete", func(ctx context.Context) (*dedupv1.ClaimResponse, error) {
					_, err := c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: consumer, Key: key,
						FencingToken: got.GetFencingToken(), Result: []byte(key)})
					return nil, err
				})
			}
		})
	}
	return l
}

// call makes one call with the outage deadline and records its answer.
func (l *outageLoad) call(name string, f func(context.Context) (*dedupv1.ClaimResponse, error)) (*dedupv1.ClaimResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), outageDeadline)
	defer cancel()
	start := time.Now()
	got, err := f(ctx)
	took := time.Since(start)
	code := status.Code(err)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.codes[code]++
	if took > outageDeadline+outageMargin {
		l.bad = append(l.bad, fmt.Sprintf("%s returned %v after %s, past its %s deadline", name, code, took, outageDeadline))
	}
	if code != codes.OK && code != codes.Unavailable {
		l.bad = append(l.bad, fmt.Sprintf("%s failed with %v, want UNAVAILABLE: %v", name, code, err))
	}
	if code == codes.OK {
		l.ok.Add(1)
	}
	return got, err
}

func (l *outageLoad) resetCounts() map[codes.Code]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	counts := l.codes
	l.codes = map[codes.Code]int{}
	l.ok.Store(0)
	return counts
}

// waitForOK waits until n more calls have succeeded.
func (l *outageLoad) waitForOK(t *testing.T, n int64, within time.Duration) {
	t.Helper()
	target := l.ok.Load() + n
	deadline := time.Now().Add(within)
	for l.ok.Load() < target {
		if time.Now().After(deadline) {
			t.Fatalf("%d successful calls in %s, want %d; answers: %v", l.ok.Load()-target+n, within, n, l.resetCounts())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (l *outageLoad) stop() {
	l.cancel()
	l.wg.Wait()
}

func (l *outageLoad) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.bad) > 0 {
		t.Errorf("%d calls broke the outage promise, first %d:\n%s", len(l.bad), min(len(l.bad), 10), strings.Join(l.bad[:min(len(l.bad), 10)], "\n"))
	}
}

// scrapeMetric reads one unlabelled sample from the Prometheus text
// format at http://addr/metrics.
func scrapeMetric(t *testing.T, addr, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scraping metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if value, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				t.Fatalf("metric %s: %v", sc.Text(), err)
			}
			return v
		}
	}
	t.Fatalf("metric %s not found at %s/metrics", name, addr)
	return 0
}
