// Command nats-payments is a payment consumer on NATS JetStream that
// charges each event exactly once although the gateway's charge is not
// idempotent: dedupd's Do claims the event id, Settle asks the gateway
// whether an earlier holder already charged, and the message is acked,
// retried or dead-lettered by Do's outcome (Disposition, after the table
// in docs/guarantees.md). JetStream redelivers a message that is not
// acked within AckWait, which is what brings an event back after a crash.
//
// The test in this directory runs it as subprocesses, kills them at every
// crash point, and checks the gateway's books; see README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/dedupd/dedupd/client"
)

// config is the command line.
type config struct {
	dedupd, natsURL, gateway string
	stream, subject, durable string
	consumer                 string
	lease, ackWait           time.Duration
	batch                    int
	noSettle                 bool
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
	flag.StringVar(&cfg.dedupd, "dedupd", dedupdAddr(), "older name of -server")
	flag.StringVar(&cfg.natsURL, "nats", nats.DefaultURL, "NATS URL")
	flag.StringVar(&cfg.gateway, "gateway", "http://127.0.0.1:8080", "payment gateway base URL")
	flag.StringVar(&cfg.stream, "stream", "PAYMENTS", "JetStream stream (created if missing)")
	flag.StringVar(&cfg.subject, "subject", "payments.events", "subject of the events")
	flag.StringVar(&cfg.durable, "durable", "payments", "durable JetStream consumer (created if missing)")
	flag.StringVar(&cfg.consumer, "consumer", "payments", "dedupd consumer")
	flag.DurationVar(&cfg.lease, "lease", 2*time.Second, "dedupd lease")
	flag.DurationVar(&cfg.ackWait, "ack-wait", 3*time.Second, "JetStream AckWait: redelivery of an unacked message (longer than -lease)")
	flag.IntVar(&cfg.batch, "batch", 4, "messages per fetch")
	flag.BoolVar(&cfg.noSettle, "no-settle", false, "run without Settle, to see double charges (demonstration only)")
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
	nc, err := nats.Connect(cfg.natsURL)
	if err != nil {
		return err
	}
	defer nc.Close()
	cons, err := bind(ctx, nc, cfg)
	if err != nil {
		return err
	}
	p := &Payments{Dedup: dc, Gateway: &Gateway{BaseURL: cfg.gateway, HTTP: &http.Client{Timeout: 10 * time.Second}},
		Consumer: cfg.consumer, Lease: cfg.lease, NoSettle: cfg.noSettle, hooks: h}
	for ctx.Err() == nil {
		batch, err := cons.Fetch(cfg.batch, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			log.Printf("fetch: %v", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for msg := range batch.Messages() {
			handle(ctx, p, nc, msg)
		}
	}
	return ctx.Err()
}

// bind makes sure the stream and the durable consumer exist, with the
// AckWait that redelivers a message a crashed consumer did not ack.
func bind(ctx context.Context, nc *nats.Conn, cfg config) (jetstream.Consumer, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: cfg.stream, Subjects: []string{cfg.subject}}); err != nil {
		return nil, fmt.Errorf("stream %s: %w", cfg.stream, err)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, cfg.stream, jetstream.ConsumerConfig{
		Durable: cfg.durable, AckPolicy: jetstream.AckExplicitPolicy, AckWait: cfg.ackWait, MaxDeliver: -1})
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", cfg.durable, err)
	}
	return cons, nil
}

// handle runs one message through Payments and settles the message by the
// outcome: ack, retry later, or dead-letter.
func handle(ctx context.Context, p *Payments, nc *nats.Conn, msg jetstream.Msg) {
	id, res, err := p.Handle(ctx, msg.Data())
	fresh := err == nil && !res.Replayed
	if fresh && p.hooks.chosen(pointDrop, id) {
		fmt.Fprintf(os.Stdout, "drop %s\n", id)
		nc.Close() // the connection goes without the ack; AckWait redelivers
		os.Exit(3)
	}
	p.hooks.at(pointComplete, id, fresh)
	action, delay := Disposition(err, p.Lease)
	var ackErr error
	switch action {
	case Ack:
		ackErr = msg.DoubleAck(ctx)
	case Retry:
		log.Printf("event %s: retry in %s: %v", id, delay, err)
		ackErr = msg.NakWithDelay(delay)
	case DeadLetter:
		log.Printf("event %s: dead-lettered: %v", id, err)
		ackErr = msg.TermWithReason(truncate(err.Error(), 200))
	}
	if ackErr != nil {
		// The broker redelivers after AckWait; Do replays or settles then.
		log.Printf("event %s: ack: %v", id, ackErr)
	}
	fmt.Fprintf(os.Stdout, "event %s %s\n", id, describe(res, err))
}

func describe(res client.DoResult, err error) string {
	switch {
	case err != nil:
		return "error"
	case res.Settled:
		return "settled"
	case res.Replayed:
		return "replayed"
	}
	return "completed"
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
