// Command walkthrough runs the life of one event against a running dedupd,
// the same steps as walkthrough.py and walkthrough.js: claim, complete,
// replay, a conflict, and a crashed claim settled by reconciliation. It
// prints each answer and exits non-zero if any differs from what dedupd
// promises, so CI runs it as a check of the README.
//
//	go run ./examples/walkthrough            # dedupd on 127.0.0.1:7070, or $DEDUPD_ADDR
//
// Its consumer, walkthrough-go, is its own: the reconcile step settles
// every expired claim of the consumer, so a shared one would settle
// another program's.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/dedupd/dedupd/client"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// consumer is the walkthrough's own dedupd consumer.
const consumer = "walkthrough-go"

func main() {
	addr := os.Getenv("DEDUPD_ADDR")
	if addr == "" {
		addr = "127.0.0.1:7070"
	}
	if err := run(context.Background(), addr); err != nil {
		log.Fatalf("walkthrough: %v", err)
	}
	fmt.Println("walkthrough: ok")
}

func run(ctx context.Context, addr string) error {
	c, err := client.New(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	// A fresh event id per run, so the walkthrough can run again on the
	// same server and still show a first delivery.
	id := fmt.Sprintf("E42-%d", time.Now().UnixNano())
	digest, err := client.DigestValue(map[string]any{"event_id": id, "item": "widget", "qty": 3})
	if err != nil {
		return err
	}

	// Claim, do the work, record the outcome: one call. fn gets the fencing
	// token; pass it to your own write so a stale holder cannot win.
	runs := 0
	takeStock := func(ctx context.Context, a client.Attempt) ([]byte, error) {
		runs++
		return []byte("stock=97"), nil // your side effect goes here
	}
	first, err := c.Do(ctx, consumer, id, digest, client.DoOptions{}, takeStock)
	if err != nil {
		return err
	}
	fmt.Printf("first delivery: result=%s replayed=%v\n", first.Result, first.Replayed)

	// Redelivery: the stored result comes back, takeStock does not run.
	again, err := c.Do(ctx, consumer, id, digest, client.DoOptions{}, takeStock)
	if err != nil {
		return err
	}
	fmt.Printf("redelivery: result=%s replayed=%v\n", again.Result, again.Replayed)
	if first.Replayed || !again.Replayed || runs != 1 || string(again.Result) != "stock=97" {
		return fmt.Errorf("the work ran %d times; want once, then a replay", runs)
	}

	// Same key, other content: a conflict, with the stored record attached.
	other, _ := client.DigestValue(map[string]any{"event_id": id, "item": "widget", "qty": 4})
	_, err = c.Claim(ctx, consumer, id, other, client.ClaimOptions{})
	var conflict *client.Error
	if !errors.Is(err, client.ErrDigestMismatch) || !errors.As(err, &conflict) {
		return fmt.Errorf("claim with other content: %w, want DIGEST_MISMATCH", err)
	}
	fmt.Printf("other content: %s, stored result=%s\n", conflict.Reason, conflict.Record.GetResult())

	if err := claimAPoll(ctx, c, id); err != nil {
		return err
	}
	return reconcileCrashedClaim(ctx, c, id+"-crashed")
}

// claimAPoll handles a whole poll of messages with one ClaimBatch and one
// FinishBatch (DoBatch), then again as a redelivery: every message is
// replayed and the work does not run.
func claimAPoll(ctx context.Context, c *client.Client, id string) error {
	poll := make([]client.BatchItem, 5)
	for i := range poll {
		poll[i].Key = fmt.Sprintf("%s-poll-%d", id, i)
	}
	runs := 0
	work := func(ctx context.Context, key string, a client.Attempt) ([]byte, error) {
		runs++
		return []byte("done " + key), nil
	}
	for _, delivery := range []string{"poll", "redelivered poll"} {
		outcomes, err := c.DoBatch(ctx, consumer, poll, client.DoBatchOptions{}, work)
		if err != nil {
			return err
		}
		replayed := 0
		for _, o := range outcomes {
			if o.Err != nil {
				return o.Err
			}
			if o.Replayed {
				replayed++
			}
		}
		fmt.Printf("%s of %d: replayed=%d, work ran %d times in all\n", delivery, len(poll), replayed, runs)
	}
	if runs != len(poll) {
		return fmt.Errorf("the poll's work ran %d times; want %d", runs, len(poll))
	}
	return nil
}

// reconcileCrashedClaim claims a key as a worker that then dies, and
// settles it the way an operator's reconciliation job would.
func reconcileCrashedClaim(ctx context.Context, c *client.Client, key string) error {
	claim, err := c.Claim(ctx, consumer, key, client.Digest([]byte(key)),
		client.ClaimOptions{LeaseTTL: 500 * time.Millisecond, Owner: "worker-that-died"})
	if err != nil {
		return err
	}
	fmt.Printf("crashed worker claimed %s with token %d\n", key, claim.FencingToken)
	time.Sleep(time.Second) // the lease runs out; nothing was recorded

	settled := map[string]int64{}
	r := client.Reconciler{
		Client: c, Consumer: consumer, Owner: "reconciler",
		Check: func(ctx context.Context, a client.Attempt) (client.Verdict, error) {
			settled[a.Record.GetKey()] = a.FencingToken
			effectHappened := false // look the event up in your own database
			if effectHappened {
				return client.CompleteWith([]byte("stock=94")), nil
			}
			return client.Release("NOT_APPLIED", "the effect never happened; redeliver"), nil
		},
	}
	report, err := r.Run(ctx)
	if err != nil {
		return err
	}
	rec, err := c.Lookup(ctx, consumer, key)
	if err != nil {
		return err
	}
	fmt.Printf("reconciled: released=%d, %s is %s (token %d)\n", report.Released, key, rec.GetState(), rec.GetFencingToken())
	if settled[key] != claim.FencingToken+1 || rec.GetState() != dedupv1.State_STATE_RELEASED {
		return fmt.Errorf("the crashed claim was not taken over and released: %v", rec)
	}
	return nil
}
