package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/internal/testing/dedupdproc"
	"github.com/dedupd/dedupd/internal/testing/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const (
	events = 150
	// crashEvery: about one event in crashEvery kills its process at each
	// crash point (11 points, two relays and two consumer stages).
	crashEvery = 20
	// consumersPerStage run side by side, so a redelivery may reach
	// another process than the one that crashed.
	consumersPerStage = 2
	lease             = "1s"
	// runLimit turns a run that never settles into a failure; it judges
	// nothing (the books do).
	runLimit = 240 * time.Second
)

// TestChainUnderKill9: the producer, both relays and both consumer stages
// are killed with SIGKILL at every crash point and restarted; in the end
// every order has exactly one effect in each stage, nothing is lost or
// left unsent, no record is PENDING, and the duplicates the relays and the
// broker made were all absorbed by dedupd.
func TestChainUnderKill9(t *testing.T) {
	amqpURL := brokerURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), runLimit+time.Minute)
	defer cancel()
	bins := build(t)
	dedupd := dedupdproc.Start(t, bins.dedupd, "--data-dir", t.TempDir())
	dc, err := client.New(dedupd.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dc.Close() })
	urls, pools := openDatabases(ctx, t, bins.chain)
	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	w := &world{bin: bins.chain, amqpURL: amqpURL, dedupdAddr: dedupd.Addr, urls: urls,
		ordersQ: "chain.orders." + runID, shippedQ: "chain.shipped." + runID, fig: newFigures()}
	broker := newBroker(t, amqpURL, w.ordersQ, w.shippedQ)

	fig := w.fig
	crashDir := t.TempDir()
	crashEnv := []string{"CHAIN_CRASH_EVERY=" + strconv.Itoa(crashEvery), "CHAIN_CRASH_DIR=" + crashDir, "CHAIN_CRASH_POINTS=all"}
	producer, relays := w.producer(crashEnv), w.relays(crashEnv)
	stages := w.consumers(crashEnv)
	start := time.Now()
	for _, s := range append(append([]*supervisor{producer}, relays...), stages...) {
		s.start(t)
	}
	err = waitFor(ctx, start, func() bool { return producer.done() && chainSettled(ctx, pools) })
	for _, s := range relays {
		s.stop()
	}
	producer.stop()
	if err == nil {
		err = drain(ctx, t, start, broker, stages, func() []*supervisor { return w.consumers(nil) })
	} else {
		stopAll(stages)
	}
	took := time.Since(start)
	report(t, fig, crashDir, took)
	if err != nil {
		t.Fatalf("%v\nlogs:\n%s", err, fig.logs.String())
	}
	if problems := readBooks(ctx, t, pools, dc, events).problems(events); len(problems) > 0 {
		t.Fatalf("%d problems, first: %q\nlogs:\n%s", len(problems), problems[:min(len(problems), 10)], fig.logs.String())
	}
	checkExercised(t, fig, crashDir)
}

// openDatabases gives each service its own schema, migrated, and a pool
// on it for the test's own reads.
func openDatabases(ctx context.Context, t *testing.T, bin string) (map[string]string, map[string]*pgxpool.Pool) {
	urls, pools := map[string]string{}, map[string]*pgxpool.Pool{}
	for _, svc := range []string{"producer", shipping, ledger} {
		urls[svc] = pgtest.URL(t)
		if out, err := exec.Command(bin, "migrate", "-db", urls[svc]).CombinedOutput(); err != nil {
			t.Fatalf("migrate %s: %v\n%s", svc, err, out)
		}
		pool, err := pgxpool.New(ctx, urls[svc])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		pools[svc] = pool
	}
	return urls, pools
}

// world is one run's services: where each one's database, queue and
// dedupd are, and how each role is started.
type world struct {
	bin, amqpURL, dedupdAddr string
	urls                     map[string]string // service → database URL
	ordersQ, shippedQ        string
	fig                      *figures
}

func (w *world) role(name string, slots int, env []string, args ...string) *supervisor {
	return &supervisor{role: name, bin: w.bin, args: args, env: env, slots: slots, fig: w.fig}
}

func (w *world) producer(env []string) *supervisor {
	return w.role("producer", 1, env, "produce", "-db", w.urls["producer"], "-events", strconv.Itoa(events))
}

// relays: the producer's outbox to the orders queue, the shipping stage's
// to the shipped queue, by the same code.
func (w *world) relays(env []string) []*supervisor {
	return []*supervisor{
		w.role("relay-orders", 1, env, "relay", "-db", w.urls["producer"], "-amqp", w.amqpURL, "-queue", w.ordersQ),
		w.role("relay-shipped", 1, env, "relay", "-db", w.urls[shipping], "-amqp", w.amqpURL, "-queue", w.shippedQ),
	}
}

// consumers: the shipping stage, which emits a shipped event per order,
// and the ledger stage downstream, by the same code.
func (w *world) consumers(env []string) []*supervisor {
	return []*supervisor{
		w.role(shipping, consumersPerStage, env, "consume", "-db", w.urls[shipping], "-amqp", w.amqpURL, "-queue", w.ordersQ,
			"-server", w.dedupdAddr, "-consumer", shipping, "-next", shippedPrefx, "-lease", lease),
		w.role(ledger, consumersPerStage, env, "consume", "-db", w.urls[ledger], "-amqp", w.amqpURL, "-queue", w.shippedQ,
			"-server", w.dedupdAddr, "-consumer", ledger, "-lease", lease),
	}
}

func brokerURL(t *testing.T) string {
	url := os.Getenv("AMQP_URL")
	if url == "" {
		url = defaultAMQP
	}
	conn, err := amqp.Dial(url)
	if err != nil {
		if pgtest.InCI(os.Getenv("CI")) {
			t.Fatalf("RabbitMQ at %s: %v (CI needs it)", url, err)
		}
		t.Skipf("RabbitMQ at %s: %v", url, err)
	}
	_ = conn.Close()
	return url
}

// waitFor polls done until it holds; runLimit turns a hang into an error.
func waitFor(ctx context.Context, start time.Time, done func() bool) error {
	for !done() {
		if time.Since(start) > runLimit {
			return fmt.Errorf("the chain did not settle within %s", runLimit)
		}
		sleep(ctx, 200*time.Millisecond)
	}
	return ctx.Err()
}

// chainSettled: every outbox row is sent and the ledger has an effect for
// every order (the producer has placed them all: checked before).
func chainSettled(ctx context.Context, pools map[string]*pgxpool.Pool) bool {
	var unsent, ledgered int
	for _, svc := range []string{"producer", shipping} {
		var n int
		if pools[svc].QueryRow(ctx, `SELECT count(*) FROM outbox WHERE sent_at IS NULL`).Scan(&n) != nil {
			return false
		}
		unsent += n
	}
	if pools[ledger].QueryRow(ctx, `SELECT count(*) FROM effects`).Scan(&ledgered) != nil {
		return false
	}
	return unsent == 0 && ledgered >= events
}

// drain stops the consumers gracefully (nothing unacked is left behind)
// and, while a queue still holds messages (duplicates, or a redelivery of
// a message whose holder was killed), runs consumers without crash points
// until the queues are empty, then stops them and looks again.
func drain(ctx context.Context, t *testing.T, start time.Time, b *broker, stages []*supervisor, fresh func() []*supervisor) error {
	for round := 0; ; round++ {
		stopAll(stages)
		ready, err := b.ready()
		if err != nil || ready == 0 {
			return err
		}
		if round == 5 {
			return fmt.Errorf("%d messages still queued after %d drain rounds", ready, round)
		}
		stages = fresh()
		for _, s := range stages {
			s.start(t)
		}
		if err := waitFor(ctx, start, func() bool { n, err := b.ready(); return err == nil && n == 0 }); err != nil {
			stopAll(stages)
			return err
		}
	}
}

func stopAll(ss []*supervisor) {
	for _, s := range ss {
		s.stop()
	}
}

// broker is the test's own RabbitMQ connection: it declares the run's
// queues, counts their ready messages and deletes them at the end.
type broker struct {
	ch     *amqp.Channel
	queues []string
}

func newBroker(t *testing.T, url string, queues ...string) *broker {
	conn, ch, err := dialQueue(url, queues[0])
	if err == nil {
		_, err = ch.QueueDeclare(queues[1], true, false, false, false, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, q := range queues {
			_, _ = ch.QueueDelete(q, false, false, false)
		}
		_ = conn.Close()
	})
	return &broker{ch: ch, queues: queues}
}

func (b *broker) ready() (int, error) {
	n := 0
	for _, q := range b.queues {
		info, err := b.ch.QueueDeclarePassive(q, true, false, false, false, nil)
		if err != nil {
			return 0, err
		}
		n += info.Messages
	}
	return n, nil
}

// markers counts the kills recorded in dir by crash point.
func markers(t *testing.T, dir string) map[string]int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range entries {
		point, _, _ := strings.Cut(e.Name(), "@")
		out[point]++
	}
	return out
}
