// Command kafka-go is a Kafka consumer group member that books each
// transfer event in a ledger exactly once although the ledger's post is
// not idempotent: dedupd's Do claims the event id, Settle asks the ledger
// whether an earlier holder already posted, and the record's offset is
// committed only once Do has recorded the outcome in dedupd. A record whose
// offset was not committed (the consumer crashed, or lost its partitions)
// is polled again by the partition's next owner, which replays or settles.
//
// The test in this directory runs it as subprocesses against kfake (see
// cmd/fakekafka), kills them at every crash point, and checks the ledger's
// books; see README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupd/dedupd/client"
)

// config is the command line.
type config struct {
	dedupd, ledger            string
	brokers, topic, group     string
	deadLetterTopic, consumer string
	instanceID                string
	lease, session            time.Duration
	maxPoll                   int
	noSettle                  bool
}

// dedupdAddr is $DEDUPD_ADDR, or dedupd's default listen address.
func dedupdAddr() string {
	if addr := os.Getenv("DEDUPD_ADDR"); addr != "" {
		return addr
	}
	return "127.0.0.1:7070"
}

func main() {
	var cfg config
	flag.StringVar(&cfg.dedupd, "server", dedupdAddr(), "dedupd address (default from $DEDUPD_ADDR)")
	flag.StringVar(&cfg.brokers, "brokers", "127.0.0.1:9092", "Kafka seed brokers, comma-separated")
	flag.StringVar(&cfg.topic, "topic", "transfers", "topic of the events")
	flag.StringVar(&cfg.deadLetterTopic, "dead-letter-topic", "transfers.dlq", "topic for records that can never succeed")
	flag.StringVar(&cfg.group, "group", "transfers", "Kafka consumer group")
	flag.StringVar(&cfg.consumer, "consumer", "transfers", "dedupd consumer")
	flag.StringVar(&cfg.ledger, "ledger", "http://127.0.0.1:8080", "ledger base URL")
	flag.DurationVar(&cfg.lease, "lease", 5*time.Second, "dedupd lease")
	flag.DurationVar(&cfg.session, "session-timeout", 45*time.Second,
		"consumer group session timeout: how long a dead member keeps its partitions")
	flag.StringVar(&cfg.instanceID, "instance-id", "",
		"static group membership: a restarted consumer with the same id takes its partitions back at once, without a rebalance")
	flag.IntVar(&cfg.maxPoll, "max-poll", 16, "records per poll; a rebalance waits until they are processed")
	flag.BoolVar(&cfg.noSettle, "no-settle", false, "run without Settle, to see double posts (demonstration only)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, cfg)
	stop()
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}

func run(ctx context.Context, cfg config) error {
	h, err := hooksFromEnv()
	if err != nil {
		return err
	}
	dc, err := client.New(cfg.dedupd)
	if err != nil {
		return err
	}
	defer dc.Close()
	opts := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(cfg.brokers, ",")...),
		kgo.ConsumerGroup(cfg.group),
		kgo.ConsumeTopics(cfg.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// Offsets are committed by hand, one record at a time, once its
		// outcome is in dedupd: autocommit would commit what was polled,
		// processed or not.
		kgo.DisableAutoCommit(),
		// A rebalance waits until the polled records are processed and
		// committed, so no record is committed by a member that no longer
		// owns its partition.
		kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(cfg.session),
		kgo.HeartbeatInterval(cfg.session / 5),
	}
	if cfg.instanceID != "" {
		opts = append(opts, kgo.InstanceID(cfg.instanceID))
	}
	kc, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer leave(kc)
	t := &Transfers{Dedup: dc, Ledger: &Ledger{BaseURL: cfg.ledger, HTTP: &http.Client{Timeout: 10 * time.Second}},
		Consumer: cfg.consumer, Lease: cfg.lease, NoSettle: cfg.noSettle, hooks: h}
	for ctx.Err() == nil {
		fetches := kc.PollRecords(ctx, cfg.maxPoll)
		fetches.EachError(func(topic string, partition int32, err error) {
			if !errors.Is(err, context.Canceled) {
				log.Printf("fetch %s/%d: %v", topic, partition, err)
			}
		})
		for _, rec := range fetches.Records() {
			if err := consume(ctx, kc, t, cfg.deadLetterTopic, rec); err != nil {
				break // shutting down; the record's offset stays uncommitted
			}
		}
		kc.AllowRebalance()
	}
	return ctx.Err()
}

// leave leaves the group so that its partitions move on at once rather
// than after the session timeout (a static member does not leave: its
// partitions wait for it, or for the session timeout), and closes the
// client. Close alone
// hangs while a poll blocks rebalances, and waits for the leave without a
// bound: the leave gets a few seconds, then Close returns at once.
func leave(kc *kgo.Client) {
	kc.AllowRebalance()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := kc.LeaveGroupContext(ctx); err != nil {
		log.Printf("leaving the group: %v", err)
	}
	kc.Close()
}
