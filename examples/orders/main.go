// Command orders is the runnable half of the order-events example: it
// feeds a few orders' created/paid/cancelled events, shuffled and partly
// repeated, through a redelivering loop into a consumer that applies each
// once and in order with a dedupd stream per order, then prints each
// order's final status. See orders/orders.go. With -park, dedupd holds the
// early events (park mode, orders/park.go) and no message is delivered
// twice; it prints how many were.
//
//	go run ./examples/orders            # dedupd at $DEDUPD_ADDR, or 127.0.0.1:7070; -server overrides
//	go run ./examples/orders -park
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"time"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/examples/orders/orders"
)

func main() {
	addr := flag.String("server", dedupdAddr(), "dedupd address (default from $DEDUPD_ADDR)")
	flag.StringVar(addr, "dedupd", dedupdAddr(), "older name of -server")
	park := flag.Bool("park", false, "park early events in dedupd instead of redelivering them")
	flag.Parse()
	if err := run(*addr, *park); err != nil {
		log.Fatal(err)
	}
}

// dedupdAddr is $DEDUPD_ADDR, or dedupd's default listen address.
func dedupdAddr() string {
	if addr := os.Getenv("DEDUPD_ADDR"); addr != "" {
		return addr
	}
	return "127.0.0.1:7070"
}

func run(addr string, park bool) error {
	c, err := client.New(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	table := orders.NewTable()
	consumer := &orders.Consumer{Dedup: c, Table: table, Consumer: "orders-example", Lease: 10 * time.Second}
	parker := &orders.ParkConsumer{Dedup: c, Table: table, Consumer: "orders-example-park", Lease: 10 * time.Second}
	handle := consumer.Handle
	if park {
		handle = parker.HandleParked
	}
	runID := fmt.Sprintf("%d", time.Now().UnixNano())
	ctx := context.Background()
	redelivered, err := orders.Redeliver(ctx, Events(runID), 10*time.Millisecond, func(ev orders.Event) (orders.Outcome, error) {
		return handle(ctx, ev)
	})
	if err != nil {
		return err
	}
	fmt.Printf("%d redeliveries\n", redelivered)
	for _, id := range []string{"a", "b", "c"} {
		order := "order-" + id + "-" + runID
		fmt.Printf("%s: %s\n", order, table.Status(order))
	}
	return nil
}

// Events are three orders' events (a: created, paid; b: created, paid,
// cancelled; c: created), shuffled, with some delivered twice. run names
// the orders, so each run of the example starts fresh streams.
func Events(run string) []orders.Event {
	var evs []orders.Event
	for id, statuses := range map[string][]string{"a": {"created", "paid"}, "b": {"created", "paid", "cancelled"}, "c": {"created"}} {
		for i, s := range statuses {
			evs = append(evs, orders.Event{Order: "order-" + id + "-" + run, Seq: int64(i + 1), Status: s})
		}
	}
	evs = append(evs, evs[0], evs[2], evs[len(evs)-1])
	rand.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
	return evs
}
