// Command inventory is the runnable half of the inventory example: it
// reads events as JSON lines on stdin ({"event_id":"E42","item":"widget",
// "qty":3}) and takes stock for each exactly once, or with -reconcile
// settles the events whose claim was abandoned. See README.md beside it.
// Against a dedupd with --auth-tokens, put the token in DEDUPD_TOKEN; -tls-ca
// (and -tls-cert/-tls-key for mutual TLS) connect with TLS.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/examples/inventory/stock"
)

func main() {
	addr := flag.String("dedupd", "127.0.0.1:7070", "dedupd address")
	dbURL := flag.String("database-url", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "the consumer's own PostgreSQL")
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
		log.Fatal(err)
	}
	if err := run(*addr, *dbURL, *seed, *reconcile, opts); err != nil {
		log.Fatal(err)
	}
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

func run(addr, dbURL string, seed int, reconcile bool, opts []client.Option) error {
	ctx := context.Background()
	db, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Exec(ctx, stock.Schema); err != nil {
		return err
	}
	if seed >= 0 {
		if _, err := db.Exec(ctx, `INSERT INTO stock VALUES ('widget', $1) ON CONFLICT (item) DO UPDATE SET qty = $1`, seed); err != nil {
			return err
		}
	}
	dedup, err := client.New(addr, opts...)
	if err != nil {
		return err
	}
	defer dedup.Close()
	c := &stock.Consumer{DB: db, Dedup: dedup, Name: "inventory", LeaseTTL: 30 * time.Second}
	if reconcile {
		report, err := c.Reconciler().Run(ctx)
		if err != nil {
			return err
		}
		fmt.Printf("reconciled: %+v\n", report)
		return nil
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var e stock.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return err
		}
		left, replayed, err := c.Handle(ctx, e)
		if err != nil {
			fmt.Printf("%s: %v\n", e.ID, err)
			continue
		}
		fmt.Printf("%s: %d left (replayed: %v)\n", e.ID, left, replayed)
	}
	return sc.Err()
}
