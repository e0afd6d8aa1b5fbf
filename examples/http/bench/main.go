// Command bench measures what dedupd gateway adds to a request: it sends
// the same POST straight to the order API and through the gateway, in
// alternating rounds of one run, and reports latency and the CPU the
// server processes spent per request (from /proc/PID/stat, so the load
// generator's own CPU is not counted). examples/http/bench.sh starts the
// processes and runs it.
//
// Through the gateway each request has a fresh Idempotency-Key (a claim,
// the upstream call and a Complete) unless -replay is set (one stored key,
// every request a replay).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat times (100 on Linux).
const clockTicks = 100

func main() {
	direct := flag.String("direct", "", "base URL of the order API")
	gateway := flag.String("gateway", "", "base URL of the gateway in front of it")
	pids := flag.String("pids", "", "comma-separated name=pid of the server processes to charge CPU to")
	n := flag.Int("n", 3000, "requests per round")
	c := flag.Int("c", 8, "concurrent clients")
	rounds := flag.Int("rounds", 3, "rounds of each, alternating")
	replay := flag.Bool("replay", false, "through the gateway, replay one stored key instead of fresh keys")
	flag.Parse()
	procs := parsePids(*pids)
	type result struct {
		lat  []time.Duration
		cpu  map[string]float64 // seconds
		wall time.Duration
	}
	totals := map[string]*result{"direct": {cpu: map[string]float64{}}, "gateway": {cpu: map[string]float64{}}}
	var seq atomic.Int64
	for r := range *rounds {
		for _, target := range []string{"direct", "gateway"} {
			base := *direct
			if target == "gateway" {
				base = *gateway
			}
			before := cpuOf(procs)
			start := time.Now()
			lat := run(base, *n, *c, func() string {
				switch {
				case target == "direct":
					return ""
				case *replay:
					return "bench-replay"
				}
				return fmt.Sprintf("bench-%d-%d", r, seq.Add(1))
			})
			t := totals[target]
			t.wall += time.Since(start)
			t.lat = append(t.lat, lat...)
			for name, s := range cpuOf(procs) {
				t.cpu[name] += s - before[name]
			}
		}
	}
	fmt.Printf("%d rounds x %d requests, %d clients; replay=%v\n", *rounds, *n, *c, *replay)
	fmt.Printf("%-8s %9s %9s %9s %9s  %s\n", "target", "req/s", "p50", "p90", "p99", "server CPU per request (µs)")
	for _, target := range []string{"direct", "gateway"} {
		t := totals[target]
		slices.Sort(t.lat)
		q := func(f float64) time.Duration { return t.lat[int(f*float64(len(t.lat)-1))].Round(time.Microsecond) }
		var parts []string
		var sum float64
		for _, p := range procs {
			us := t.cpu[p.name] / float64(len(t.lat)) * 1e6
			sum += us
			parts = append(parts, fmt.Sprintf("%s %.0f", p.name, us))
		}
		fmt.Printf("%-8s %9.0f %9s %9s %9s  total %.0f (%s)\n", target, float64(len(t.lat))/t.wall.Seconds(),
			q(0.5), q(0.9), q(0.99), sum, strings.Join(parts, ", "))
	}
}

// run sends n POSTs from c clients and returns each one's latency; key
// gives each request its Idempotency-Key ("" for none).
func run(base string, n, c int, key func() string) []time.Duration {
	var mu sync.Mutex
	var lat []time.Duration
	var next atomic.Int64
	var wg sync.WaitGroup
	body := []byte(`{"sku":"book","qty":1}`)
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = c // one kept-alive connection per client
	hc := &http.Client{Transport: transport}
	for range c {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, base+"/orders", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				if k := key(); k != "" {
					req.Header.Set("Idempotency-Key", k)
				}
				start := time.Now()
				resp, err := hc.Do(req)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				var buf bytes.Buffer
				_, _ = buf.ReadFrom(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					fmt.Fprintf(os.Stderr, "%s: %d %s\n", base, resp.StatusCode, buf.Bytes())
					os.Exit(1)
				}
				d := time.Since(start)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return lat
}

type proc struct {
	name string
	pid  int
}

func parsePids(s string) []proc {
	var out []proc
	for kv := range strings.SplitSeq(s, ",") {
		if kv == "" {
			continue
		}
		name, pid, _ := strings.Cut(kv, "=")
		p, err := strconv.Atoi(pid)
		if err != nil {
			fmt.Fprintf(os.Stderr, "-pids %q: %v\n", kv, err)
			os.Exit(2)
		}
		out = append(out, proc{name, p})
	}
	return out
}

// cpuOf is each process's user+system CPU so far, in seconds.
func cpuOf(procs []proc) map[string]float64 {
	out := map[string]float64{}
	for _, p := range procs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		// Fields after the command name (which may hold spaces) start at
		// state; utime and stime are fields 14 and 15 of the whole line.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		out[p.name] = (ut + st) / clockTicks
	}
	return out
}
