// Command outbox-chain is the whole chain from a producer's database to a
// final consumer's ledger, each link covering either loss or duplicates:
//
//	produce  the business change (an order) and its outbox row, in one
//	         transaction: no order without its event, no event without its
//	         order;
//	relay    publishes outbox rows to RabbitMQ with publisher confirms and
//	         marks a row sent only after its confirm: a row may be
//	         published twice, never lost;
//	consume  runs dedupd's Do with receipts: the effect, the consumer's own
//	         next event (in its own outbox) and the receipt commit in one
//	         transaction, a takeover settles from the receipt, and the
//	         message is acked only after the outcome is stored: every
//	         duplicate the relay and the broker made is absorbed;
//	migrate  creates the tables of one service's database.
//
// The same relay publishes the consumer's outbox to a downstream queue,
// where a second consume stage (the ledger) counts effects. The test in
// this directory runs every part as a process, kills each with SIGKILL at
// every crash point (crash.go) and checks the books; see README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
)

// dedupdAddr is $DEDUPD_ADDR, or dedupd's default listen address.
func dedupdAddr() string {
	if addr := os.Getenv("DEDUPD_ADDR"); addr != "" {
		return addr
	}
	return "127.0.0.1:7070"
}

const (
	defaultDB   = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	defaultAMQP = "amqp://guest:guest@127.0.0.1:5672/"
)

func main() {
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: outbox-chain produce|relay|consume|migrate [flags]")
		os.Exit(2)
	}
	role, args := os.Args[1], os.Args[2:]
	log.SetPrefix(role + " ")
	// SIGTERM stops a role gracefully: it finishes the message or batch in
	// hand and exits 0. SIGKILL is the crash under test.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var err error
	switch role {
	case "produce":
		err = runProduce(ctx, args)
	case "relay":
		err = runRelay(ctx, args)
	case "consume":
		err = runConsume(ctx, args)
	case "migrate":
		err = runMigrate(ctx, args)
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	stop()
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}
