package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"
)

// relay publishes one service's outbox to one queue.
type relay struct {
	db    *pgxpool.Pool
	ch    *amqp.Channel
	queue string
	batch int
	crash crasher
}

// runRelay publishes unsent outbox rows, oldest first, until stopped.
func runRelay(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("relay", flag.ExitOnError)
	dbURL := fs.String("db", defaultDB, "PostgreSQL URL of the database whose outbox is relayed")
	amqpURL := fs.String("amqp", defaultAMQP, "RabbitMQ URL")
	queue := fs.String("queue", "chain.orders", "queue to publish to (declared durable if missing)")
	batch := fs.Int("batch", 16, "rows per round")
	_ = fs.Parse(args)
	crash, err := crasherFromEnv()
	if err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, *dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	conn, ch, err := dialQueue(*amqpURL, *queue)
	if err != nil {
		return err
	}
	defer conn.Close()
	// Confirm mode: the broker acks each publish once the queue holds it
	// (for a durable queue and a persistent message, on disk).
	if err := ch.Confirm(false); err != nil {
		return fmt.Errorf("confirm mode: %w", err)
	}
	r := &relay{db: pool, ch: ch, queue: *queue, batch: *batch, crash: crash}
	for ctx.Err() == nil {
		// A round runs to its end even when stopped: a graceful stop
		// leaves no row published and unmarked.
		n, err := r.round(context.WithoutCancel(ctx))
		if err != nil {
			return err
		}
		if n == 0 {
			sleep(ctx, 50*time.Millisecond)
		}
	}
	return nil
}

type outboxRow struct {
	id      string
	payload []byte
	confirm *amqp.DeferredConfirmation
}

// round publishes up to batch unsent rows, waits for their confirms and
// marks the confirmed ones sent. A crash anywhere before the mark leaves
// the rows unsent: the next round publishes them again (a duplicate the
// consumer's dedupd absorbs), and none is lost.
func (r *relay) round(ctx context.Context) (int, error) {
	rows, err := r.unsent(ctx)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	for i := range rows {
		row := &rows[i]
		r.crash.at(relayBeforePublish, row.id)
		row.confirm, err = r.ch.PublishWithDeferredConfirmWithContext(ctx, "", r.queue, false, false, amqp.Publishing{
			MessageId: row.id, ContentType: "application/json", DeliveryMode: amqp.Persistent, Body: row.payload})
		if err != nil {
			return 0, fmt.Errorf("publish %s: %w", row.id, err)
		}
		fmt.Fprintf(os.Stdout, "publish %s %s\n", r.queue, row.id)
		r.crash.at(relayAfterPublish, row.id)
	}
	var confirmed []string
	for _, row := range rows {
		acked, err := row.confirm.WaitContext(ctx)
		if err != nil {
			return 0, fmt.Errorf("confirm of %s: %w", row.id, err)
		}
		if !acked {
			// The broker refused it: the row stays unsent, for the next round.
			fmt.Fprintf(os.Stdout, "nacked %s %s\n", r.queue, row.id)
			continue
		}
		r.crash.at(relayAfterConfirm, row.id)
		confirmed = append(confirmed, row.id)
	}
	if _, err := r.db.Exec(ctx, `UPDATE outbox SET sent_at = now() FROM unnest($1::TEXT[]) AS s(id)
		WHERE outbox.event_id = s.id AND outbox.sent_at IS NULL`, confirmed); err != nil {
		return 0, fmt.Errorf("marking sent: %w", err)
	}
	for _, id := range confirmed {
		fmt.Fprintf(os.Stdout, "sent %s %s\n", r.queue, id)
		r.crash.at(relayAfterMark, id)
	}
	return len(rows), nil
}

func (r *relay) unsent(ctx context.Context) ([]outboxRow, error) {
	rows, err := r.db.Query(ctx, `SELECT event_id, payload FROM outbox WHERE sent_at IS NULL
		ORDER BY created_at, event_id LIMIT $1`, r.batch)
	if err != nil {
		return nil, fmt.Errorf("reading the outbox: %w", err)
	}
	defer rows.Close()
	var out []outboxRow
	for rows.Next() {
		var row outboxRow
		if err := rows.Scan(&row.id, &row.payload); err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

// dialQueue connects to RabbitMQ and declares queue: durable, shared.
func dialQueue(url, queue string) (*amqp.Connection, *amqp.Channel, error) {
	conn, err := amqp.Dial(url)
	if err != nil {
		return nil, nil, fmt.Errorf("RabbitMQ: %w", err)
	}
	ch, err := conn.Channel()
	if err == nil {
		_, err = ch.QueueDeclare(queue, true, false, false, false, nil)
	}
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("queue %s: %w", queue, err), conn.Close())
	}
	return conn, ch, nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
