// Command inventory is the runnable half of the inventory example: it
// reads events as JSON lines on stdin ({"event_id":"E42","item":"widget",
// "qty":3}) and takes stock for each exactly once, or with -reconcile
// settles the events whose claim was abandoned. See README.md beside it.
//
// dedupd's address is -server (or its older name -dedupd), or
// $DEDUPD_ADDR, or 127.0.0.1:7070. The stock lives in its own PostgreSQL database, dedupd_inventory by default
// (created when missing); -database-url or $INVENTORY_DATABASE_URL picks
// another. Against a dedupd with --auth-tokens, put the token in
// DEDUPD_TOKEN; -tls-ca (and -tls-cert/-tls-key for mutual TLS) connect
// with TLS.
//
// It exits 1 when an event is not applied (a conflict such as
// DIGEST_MISMATCH, a refusal such as OUT_OF_STOCK, or any error) or a
// reconciliation fails, and 2 on bad usage.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/examples/inventory/stock"
)

const (
	defaultAddr  = "127.0.0.1:7070"
	defaultDBURL = "postgres://postgres@127.0.0.1:5432/dedupd_inventory?sslmode=disable"
	// consumerName is this example's own dedupd consumer, so that its
	// reconciliation never settles another program's claims.
	consumerName = "inventory-example"
)

func main() {
	addr := flag.String("server", envOr("DEDUPD_ADDR", defaultAddr), "dedupd address (default from $DEDUPD_ADDR)")
	flag.StringVar(addr, "dedupd", *addr, "older name of -server")
	dbURL := flag.String("database-url", envOr("INVENTORY_DATABASE_URL", defaultDBURL),
		"the example's own PostgreSQL database, created if missing (default from $INVENTORY_DATABASE_URL)")
	seed := flag.Int("seed", -1, "set the stock of item widget to this first")
	reconcile := flag.Bool("reconcile", false, "settle abandoned claims instead of reading events")
	tlsCA := flag.String("tls-ca", "", "PEM CA of dedupd's certificate: connect with TLS")
	tlsCert := flag.String("tls-cert", "", "PEM client certificate for mutual TLS (with -tls-key)")
	tlsKey := flag.String("tls-key", "", "PEM key of -tls-cert")
	flag.Parse()
	// The library takes credentials as options only; reading the token
	// from the environment is the program's choice (it keeps the token out
	// of the process list).
	opts, err := dedupOptions(os.Getenv("DEDUPD_TOKEN"), *tlsCA, *tlsCert, *tlsKey)
	if err != nil {
		fmt.Fprintf(os.Stderr, "inventory: %v\n", err)
		os.Exit(2)
	}
	cfg := config{addr: *addr, dbURL: *dbURL, seed: *seed, reconcile: *reconcile, opts: opts}
	if err := run(context.Background(), cfg, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "inventory: %v\n", err)
		os.Exit(1)
	}
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

// dedupOptions are the client options for a token (DEDUPD_TOKEN) and the
// TLS flags.
func dedupOptions(token, caFile, certFile, keyFile string) ([]client.Option, error) {
	var opts []client.Option
	if token != "" {
		opts = append(opts, client.WithBearerToken(token))
	}
	if caFile != "" || certFile != "" {
		cfg, err := client.LoadTLSConfig(caFile, certFile, keyFile)
		if err != nil {
			return nil, err
		}
		opts = append(opts, client.WithTLS(cfg))
	}
	return opts, nil
}

type config struct {
	addr, dbURL string
	seed        int
	reconcile   bool
	opts        []client.Option
}

func run(ctx context.Context, cfg config, in io.Reader, out io.Writer) error {
	db, err := openDatabase(ctx, cfg.dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	if cfg.seed >= 0 {
		if _, err := db.Exec(ctx, `INSERT INTO stock VALUES ('widget', $1) ON CONFLICT (item) DO UPDATE SET qty = $1`, cfg.seed); err != nil {
			return fmt.Errorf("seeding the stock: %w", err)
		}
	}
	dedup, err := client.New(cfg.addr, cfg.opts...)
	if err != nil {
		return err
	}
	defer dedup.Close()
	c := &stock.Consumer{DB: db, Dedup: dedup, Name: consumerName, LeaseTTL: 30 * time.Second}
	if cfg.reconcile {
		return reconcile(ctx, c, out)
	}
	return handleEvents(ctx, c, in, out)
}

// reconcile prints one line per settled claim: key, decision, result.
func reconcile(ctx context.Context, c *stock.Consumer, out io.Writer) error {
	settled, err := c.Reconcile(ctx)
	for _, s := range settled {
		fmt.Fprintf(out, "%s: %s (%s)\n", s.Key, s.Decision, s.Result)
	}
	if err != nil {
		return fmt.Errorf("reconciling against dedupd: %w", err)
	}
	fmt.Fprintf(out, "reconciled %d abandoned claims\n", len(settled))
	return nil
}

// handleEvents applies every event on in, printing one line per event,
// and fails if any was not applied.
func handleEvents(ctx context.Context, c *stock.Consumer, in io.Reader, out io.Writer) error {
	failed := 0
	sc := bufio.NewScanner(in)
	for line := 1; sc.Scan(); line++ {
		var e stock.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("line %d is not an event such as {\"event_id\":\"E42\",\"item\":\"widget\",\"qty\":3}: %w", line, err)
		}
		left, replayed, err := c.Handle(ctx, e)
		if err != nil {
			failed++
			fmt.Fprintf(out, "%s: NOT APPLIED: %s\n", e.ID, explain(err))
			continue
		}
		how := "applied"
		if replayed {
			how = "already applied (replayed)"
		}
		fmt.Fprintf(out, "%s: %s, %d %s left\n", e.ID, how, left, e.Item)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading events: %w", err)
	}
	if failed > 0 {
		return fmt.Errorf("%d events not applied", failed)
	}
	return nil
}

// explain says what an event's failure means and what to do about it.
func explain(err error) string {
	var rejected *client.RejectedError
	switch {
	case errors.Is(err, client.ErrDigestMismatch):
		return "DIGEST_MISMATCH: this event_id was already used for an event with other content; give a new event an ID of its own"
	case errors.Is(err, stock.ErrFenced):
		return "FENCED: this event was already applied under another holder"
	case errors.As(err, &rejected):
		return fmt.Sprintf("refused (%s): %s", rejected.Rejection.Reason, rejected.Rejection.Message)
	default:
		return err.Error()
	}
}
