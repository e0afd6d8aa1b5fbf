package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dedupd/dedupd/client/receipts"
)

// OrderID names the i-th order of a run; the producer and the test agree
// on it.
func OrderID(i int) string { return fmt.Sprintf("order-%04d", i) }

// OrderAmount is the i-th order's amount.
func OrderAmount(i int) int64 { return int64(100 + i) }

// runProduce places -events orders, each with its outbox row in the same
// transaction, and exits. Restarted after a crash it starts over: an
// order that committed is found by its id and skipped, one that did not
// is placed now, so each order and its event exist exactly once.
func runProduce(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("produce", flag.ExitOnError)
	dbURL := fs.String("db", defaultDB, "PostgreSQL URL of the producer's database")
	events := fs.Int("events", 100, "orders to place")
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
	db := receipts.PgxDB(pool, pgx.TxOptions{})
	for i := range *events {
		if err := ctx.Err(); err != nil {
			return err
		}
		ev := Event{ID: OrderID(i), Order: OrderID(i), Amount: OrderAmount(i)}
		placed := false
		err := db.InTx(ctx, func(ctx context.Context, tx receipts.Tx) error {
			var id string
			var err error
			placed, err = tx.QueryRow(ctx, `INSERT INTO orders (id, amount) VALUES ($1, $2)
				ON CONFLICT (id) DO NOTHING RETURNING id`, []any{ev.Order, ev.Amount}, &id)
			if err != nil || !placed {
				return err
			}
			if err := insertOutbox(ctx, tx, ev); err != nil {
				return err
			}
			crash.at(producerBeforeCommit, ev.ID)
			return nil
		})
		if err != nil {
			return fmt.Errorf("order %s: %w", ev.Order, err)
		}
		if placed {
			crash.at(producerAfterCommit, ev.ID)
			fmt.Fprintf(os.Stdout, "order %s\n", ev.Order)
		}
	}
	return nil
}
