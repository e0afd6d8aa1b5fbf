package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dedupd/dedupd/client/receipts"
)

// Event is the body of every message in the chain.
type Event struct {
	// ID is the event's identity: the dedupd key, the outbox row and the
	// AMQP message id. It never changes on a re-publish.
	ID string `json:"id"`
	// Order is the business change the event comes from.
	Order  string `json:"order"`
	Amount int64  `json:"amount"`
}

func (e Event) encode() []byte {
	b, err := json.Marshal(e)
	if err != nil {
		panic(err) // two strings and an integer always encode
	}
	return b
}

// schema is each service's tables, one statement per transaction
// (CockroachDB's rule for DDL), each idempotent. Every service gets all of
// them: the producer uses orders and outbox, a consumer effects, outbox and
// the receipts (receipts.Migrate).
var schema = []string{
	`CREATE TABLE IF NOT EXISTS orders (
		id TEXT PRIMARY KEY,
		amount BIGINT NOT NULL,
		created_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
	// An outbox row is sent once sent_at is set, after the broker's
	// confirm; the partial index holds only what is left to send.
	`CREATE TABLE IF NOT EXISTS outbox (
		event_id TEXT PRIMARY KEY,
		payload BYTEA NOT NULL,
		created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
		sent_at TIMESTAMPTZ)`,
	`CREATE INDEX IF NOT EXISTS outbox_unsent ON outbox (created_at, event_id) WHERE sent_at IS NULL`,
	// applied counts the effect's runs that committed: exactly-once means
	// 1 for every event. It is an increment, not an idempotent write, so
	// that a duplicate effect shows.
	`CREATE TABLE IF NOT EXISTS effects (
		event_id TEXT PRIMARY KEY,
		order_id TEXT NOT NULL,
		amount BIGINT NOT NULL,
		applied BIGINT NOT NULL)`,
}

func runMigrate(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ExitOnError)
	dbURL := fs.String("db", defaultDB, "PostgreSQL URL of the service's database")
	_ = fs.Parse(args)
	pool, err := pgxpool.New(ctx, *dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	for _, stmt := range schema {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	return receipts.Migrate(ctx, receipts.PgxDB(pool, pgx.TxOptions{}), receipts.Postgres, "")
}

// insertOutbox adds event to the outbox inside tx. A row that exists
// already is the same event (its id says so) and is left alone.
func insertOutbox(ctx context.Context, tx receipts.Tx, ev Event) error {
	_, err := tx.Exec(ctx, `INSERT INTO outbox (event_id, payload) VALUES ($1, $2) ON CONFLICT (event_id) DO NOTHING`,
		ev.ID, ev.encode())
	return err
}
