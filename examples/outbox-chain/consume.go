package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/client/receipts"
)

// stage is one consumer service: its dedupd consumer, its database (the
// effect, the receipts and, with next, its own outbox) and its queue.
type stage struct {
	name     string
	dedup    *client.Client
	receipts *receipts.Receipts
	lease    time.Duration
	// next, when set, prefixes the id of the event this stage emits for
	// each event it handles; the event goes to its outbox, for a relay.
	next  string
	crash crasher
}

func runConsume(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("consume", flag.ExitOnError)
	dbURL := fs.String("db", defaultDB, "PostgreSQL URL of this consumer's database")
	amqpURL := fs.String("amqp", defaultAMQP, "RabbitMQ URL")
	queue := fs.String("queue", "chain.orders", "queue to consume (declared durable if missing)")
	server := fs.String("server", dedupdAddr(), "dedupd address (default from $DEDUPD_ADDR)")
	s := &stage{}
	fs.StringVar(&s.name, "consumer", "shipping", "dedupd consumer (and the receipts' owner)")
	fs.DurationVar(&s.lease, "lease", 2*time.Second, "dedupd lease")
	fs.StringVar(&s.next, "next", "", "emit a next event with this id prefix to the outbox (empty: none)")
	_ = fs.Parse(args)
	var err error
	if s.crash, err = crasherFromEnv(); err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, *dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if s.dedup, err = client.New(*server); err != nil {
		return err
	}
	defer s.dedup.Close()
	// A receipt lives as long as the record it stands for.
	ttl, err := receipts.TTLFromPolicy(ctx, s.dedup, s.name)
	if err != nil {
		return err
	}
	s.receipts = &receipts.Receipts{DB: receipts.PgxDB(pool, pgx.TxOptions{}), Dialect: receipts.Postgres,
		Consumer: s.name, TTL: ttl}
	conn, ch, err := dialQueue(*amqpURL, *queue)
	if err != nil {
		return err
	}
	defer conn.Close()
	// One message at a time: a graceful stop leaves none unacked behind.
	if err := ch.Qos(1, 0, false); err != nil {
		return err
	}
	deliveries, err := ch.Consume(*queue, "", false, false, false, false, nil)
	if err != nil {
		return fmt.Errorf("consume %s: %w", *queue, err)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case d, ok := <-deliveries:
			if !ok {
				return errors.New("the broker closed the channel")
			}
			// The message in hand is finished even when stopped.
			s.handle(context.WithoutCancel(ctx), d)
		}
	}
}

// handle runs one delivery through Do and acks it only once its outcome
// is stored: a crash before the ack brings it back, and Do replays it.
func (s *stage) handle(ctx context.Context, d amqp.Delivery) {
	var ev Event
	if err := json.Unmarshal(d.Body, &ev); err != nil || ev.ID == "" {
		log.Printf("undecodable message %q: dropped", d.MessageId)
		_ = d.Nack(false, false)
		return
	}
	fmt.Fprintf(os.Stdout, "deliver %s %s %t\n", s.name, ev.ID, d.Redelivered)
	res, err := s.dedup.Do(ctx, s.name, ev.ID, client.Digest(d.Body),
		client.DoOptions{LeaseTTL: s.lease, Owner: s.name, Settle: s.receipts.Settle},
		func(ctx context.Context, a client.Attempt) ([]byte, error) {
			result, err := s.withReceiptHook(ev.ID).Run(ctx, ev.ID, a.FencingToken, s.effect(ev))
			if err == nil {
				s.crash.at(consumerBeforeComplete, ev.ID)
			}
			return result, err
		})
	var rejected *client.RejectedError
	switch {
	case err == nil, errors.As(err, &rejected):
		// A rejection is stored for good: acking is all there is to do
		// (a real consumer would dead-letter it; none happens here).
		s.crash.at(consumerAfterComplete, ev.ID)
		if err := d.Ack(false); err != nil {
			log.Printf("event %s: ack: %v", ev.ID, err) // redelivered, then replayed
		}
		s.crash.at(consumerAfterAck, ev.ID)
	default:
		// Retryable, unknown outcome, or still held elsewhere: the
		// broker redelivers, and Do settles or replays then.
		log.Printf("event %s: %v; requeued", ev.ID, err)
		time.Sleep(100 * time.Millisecond)
		_ = d.Nack(false, true)
	}
	fmt.Fprintf(os.Stdout, "outcome %s %s %s\n", s.name, ev.ID, describe(res, err))
}

// effect is the stage's work in its own database: count the event's
// effect and, for a stage with a next event, write it to the outbox, in
// the transaction that Run then adds the receipt to.
func (s *stage) effect(ev Event) receipts.Effect {
	return func(ctx context.Context, tx receipts.Tx) ([]byte, error) {
		var applied int64
		if _, err := tx.QueryRow(ctx, `INSERT INTO effects (event_id, order_id, amount, applied) VALUES ($1, $2, $3, 1)
			ON CONFLICT (event_id) DO UPDATE SET applied = effects.applied + 1 RETURNING applied`,
			[]any{ev.ID, ev.Order, ev.Amount}, &applied); err != nil {
			return nil, err
		}
		if s.next != "" {
			if err := insertOutbox(ctx, tx, Event{ID: s.next + ev.ID, Order: ev.Order, Amount: ev.Amount}); err != nil {
				return nil, err
			}
		}
		s.crash.at(consumerBeforeReceipt, ev.ID)
		return fmt.Appendf(nil, "%s applied", ev.ID), nil
	}
}

// withReceiptHook is the stage's receipts with the after-receipt crash
// point between the receipt's write and COMMIT. Settle reads through the
// plain receipts.
func (s *stage) withReceiptHook(id string) *receipts.Receipts {
	r := *s.receipts
	r.DB = beforeCommit{db: s.receipts.DB, hook: func() { s.crash.at(consumerAfterReceipt, id) }}
	return &r
}

// beforeCommit runs hook once a transaction's work succeeded, just before
// its COMMIT.
type beforeCommit struct {
	db   receipts.DB
	hook func()
}

func (b beforeCommit) InTx(ctx context.Context, fn func(ctx context.Context, tx receipts.Tx) error) error {
	return b.db.InTx(ctx, func(ctx context.Context, tx receipts.Tx) error {
		if err := fn(ctx, tx); err != nil {
			return err
		}
		b.hook()
		return nil
	})
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
