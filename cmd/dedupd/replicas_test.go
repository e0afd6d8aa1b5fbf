package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/internal/testing/pgtest"
)

// replicaCluster is several dedupd processes on one PostgreSQL database,
// as production runs them behind a load balancer: each on an address of
// its own that it keeps across restarts, so that a client's connection to
// it comes back when it does.
type replicaCluster struct {
	t       *testing.T
	url     string
	addrs   []string
	procs   []*process
	clients []*client.Client
	// retriesOfKilled is the store retries counted by replicas before
	// they were killed (their counters die with them).
	retriesOfKilled float64
	kills           int
}

// startReplicas migrates a fresh database once and starts n replicas on
// it, each with a client that reconnects quickly once it is back.
func startReplicas(t *testing.T, n int) *replicaCluster {
	t.Helper()
	c := &replicaCluster{t: t, url: pgtest.URL(t)}
	if out, err := runDedupd(t, "migrate", "--database-url", c.url); err != nil {
		t.Fatalf("dedupd migrate: %v\n%s", err, out)
	}
	for i := range n {
		c.addrs = append(c.addrs, freeAddr(t))
		c.procs = append(c.procs, nil)
		c.start(i)
		cl, err := client.New(c.addrs[i], client.WithDialOptions(grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, MaxDelay: 300 * time.Millisecond},
		})))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		c.clients = append(c.clients, cl)
	}
	return c
}

// freeAddr is a loopback address with a port free right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	return lis.Addr().String()
}

func (c *replicaCluster) start(i int) {
	c.procs[i] = startDedupd(c.t, "--database-url", c.url, "--listen", c.addrs[i], "--metrics-listen", "127.0.0.1:0")
}

// kill kills replica i with SIGKILL, as a crash would.
func (c *replicaCluster) kill(i int) {
	c.t.Helper()
	c.retriesOfKilled += c.replicaRetries(i)
	if err := c.procs[i].Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		c.t.Fatal(err)
	}
	<-c.procs[i].Exited
	c.kills++
}

// storeRetries is every store retry (dedupd_store_retries_total) the
// replicas have made, the killed ones' included.
func (c *replicaCluster) storeRetries() float64 {
	total := c.retriesOfKilled
	for i := range c.procs {
		total += c.replicaRetries(i)
	}
	return total
}

func (c *replicaCluster) replicaRetries(i int) float64 {
	total := 0.0
	for _, m := range opsScrape(c.t, c.procs[i].opsMetricsAddr(c.t))["dedupd_store_retries_total"].GetMetric() {
		total += m.GetCounter().GetValue()
	}
	return total
}

// killWhile kills a random replica and restarts it half a second later:
// once when a third of the deliveries are done (the queue holds the rest
// back until the kill has landed, so it lands mid-run however fast the
// machine), and every 0.8 to 2 seconds after that, until done is closed or
// limit passes.
func (c *replicaCluster) killWhile(q interface{ milestone() <-chan func() }, done <-chan struct{}, limit time.Duration) {
	c.t.Helper()
	end := time.After(limit)
	before := c.kills
	killAndRestart := func(resume func()) {
		i := rand.N(len(c.procs))
		c.kill(i)
		resume()
		time.Sleep(500 * time.Millisecond)
		c.start(i)
	}
	for {
		select {
		case <-done:
			if c.kills == before {
				c.t.Errorf("no replica was killed while the deliveries ran")
			}
			return
		case <-end:
			c.t.Fatalf("the deliveries did not all finish within %v", limit)
		case resume := <-q.milestone():
			killAndRestart(resume)
		case <-time.After(800*time.Millisecond + rand.N(1200*time.Millisecond)):
			killAndRestart(func() {})
		}
	}
}

// deliveryQueue hands out deliveries to workers and takes back those that
// failed, for redelivery to another replica, until every one succeeded.
type deliveryQueue[T any] struct {
	ch        chan replicaDelivery[T]
	left      sync.WaitGroup
	total     int
	completed atomic.Int64
	// gate, while set, holds workers back from taking deliveries until it
	// is closed: the kill at the milestone lands meanwhile; closing it is
	// the resume sent on held.
	gate      atomic.Pointer[chan struct{}]
	held      chan func()
	replicas  int
	mu        sync.Mutex
	failures  int
	unavailed int // failures whose reason was STORE_UNAVAILABLE (out of store retries)
}

type replicaDelivery[T any] struct {
	event   T
	replica int
}

// newDeliveryQueue delivers each event copies times, each copy to a
// different replica, all in random order.
func newDeliveryQueue[T any](events []T, copies, replicas int) *deliveryQueue[T] {
	var all []replicaDelivery[T]
	for _, e := range events {
		for _, r := range rand.Perm(replicas)[:copies] {
			all = append(all, replicaDelivery[T]{e, r})
		}
	}
	rand.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	q := &deliveryQueue[T]{ch: make(chan replicaDelivery[T], len(all)), replicas: replicas, total: len(all), held: make(chan func())}
	q.left.Add(len(all))
	for _, d := range all {
		q.ch <- d
	}
	return q
}

// work runs deliver on every delivery with workers goroutines; a failed
// delivery is nacked and comes back later on another replica.
func (q *deliveryQueue[T]) work(workers int, deliver func(d replicaDelivery[T]) error) (done chan struct{}) {
	done = make(chan struct{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				if g := q.gate.Load(); g != nil {
					<-*g // a milestone's kill is landing
				}
				select {
				case <-stop:
					return
				case d := <-q.ch:
					if err := deliver(d); err != nil {
						q.failed(err)
						d.replica = (d.replica + 1 + rand.N(q.replicas-1)) % q.replicas
						time.Sleep(50 * time.Millisecond)
						q.ch <- d
						continue
					}
					q.done()
				}
			}
		})
	}
	go func() {
		q.left.Wait()
		close(stop)
		wg.Wait()
		close(done)
	}()
	return done
}

// done counts a delivery that succeeded; the one that completes a third of
// them closes the gate and hands the killer the way to open it again.
func (q *deliveryQueue[T]) done() {
	if q.completed.Add(1) == int64(q.total/3) {
		g := make(chan struct{})
		q.gate.Store(&g)
		q.held <- func() { close(g); q.gate.Store(nil) }
	}
	q.left.Done()
}

func (q *deliveryQueue[T]) milestone() <-chan func() { return q.held }

func (q *deliveryQueue[T]) failed(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.failures++
	if ce, ok := errors.AsType[*client.Error](err); ok && ce.Reason == "STORE_UNAVAILABLE" {
		q.unavailed++
	}
}

// keyLedger is the non-idempotent effect of the key scenario, owned by the
// test: how many times each key's effect ran, and what each delivery that
// succeeded was told.
type keyLedger struct {
	mu      sync.Mutex
	effects map[string]int
	acked   map[string][]byte
}

func (l *keyLedger) apply(key string) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.effects[key]++
	return []byte("effect of " + key)
}

// settle is Do's and the reconciler's Settle: the effect is in the ledger.
func (l *keyLedger) settle(key string) (result []byte, found bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.effects[key] > 0 {
		return []byte("effect of " + key), true
	}
	return nil, false
}

func (l *keyLedger) ack(key string, result []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acked[key] = result
}

// figures prints what a scenario measured, for CI's output.
func figures(t *testing.T, format string, args ...any) {
	t.Helper()
	fmt.Println("replicas: " + strings.TrimSpace(fmt.Sprintf(format, args...)))
}
