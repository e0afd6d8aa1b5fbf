package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
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

// killAndRestart kills replica i with SIGKILL, as a crash would, and
// starts it again on its address after pause.
func (c *replicaCluster) killAndRestart(i int, pause time.Duration) {
	c.t.Helper()
	c.retriesOfKilled += c.replicaRetries(i)
	if err := c.procs[i].Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		c.t.Fatal(err)
	}
	<-c.procs[i].Exited
	c.kills++
	time.Sleep(pause)
	c.start(i)
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

// killWhile kills a random replica every 0.8 to 2 seconds, and restarts it
// half a second later, until done is closed or limit passes; it fails the
// test if done closed before any kill (a run that tested nothing).
func (c *replicaCluster) killWhile(done <-chan struct{}, limit time.Duration) {
	c.t.Helper()
	end := time.After(limit)
	before := c.kills
	for {
		select {
		case <-done:
			if c.kills == before {
				c.t.Errorf("the deliveries all finished before any replica was killed: raise the event count")
			}
			return
		case <-end:
			c.t.Fatalf("the deliveries did not all finish within %v", limit)
		case <-time.After(800*time.Millisecond + rand.N(1200*time.Millisecond)):
			c.killAndRestart(rand.N(len(c.procs)), 500*time.Millisecond)
		}
	}
}

// deliveryQueue hands out deliveries to workers and takes back those that
// failed, for redelivery to another replica, until every one succeeded.
type deliveryQueue[T any] struct {
	ch        chan replicaDelivery[T]
	left      sync.WaitGroup
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
	q := &deliveryQueue[T]{ch: make(chan replicaDelivery[T], len(all)), replicas: replicas}
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
					q.left.Done()
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
	line := fmt.Sprintf(format, args...)
	t.Log(line)
	fmt.Println("replicas: " + strings.TrimSpace(line))
}
