// Package stock is the library half of the inventory example: a consumer
// that takes items out of stock in PostgreSQL once per event, using dedupd
// for the dedup record and the fencing token to guard its own write.
//
// The stock change and the event's row in applied_events commit in one
// transaction, and that row carries the highest fencing token that touched
// the event. A holder whose lease ran out (token lower than the row's) is
// refused, and an attempt that finds the event applied returns the stored
// outcome instead of taking stock twice. That is what turns dedupd's
// at-most-one-holder into exactly one effect across crashes.
package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dedupd/dedupd/client"
)

// Schema creates the consumer's own tables.
const Schema = `
CREATE TABLE IF NOT EXISTS stock (
	item TEXT PRIMARY KEY,
	qty  INT NOT NULL CHECK (qty >= 0)
);
CREATE TABLE IF NOT EXISTS applied_events (
	event_id      TEXT PRIMARY KEY,
	fencing_token BIGINT NOT NULL,
	applied       BOOLEAN NOT NULL DEFAULT false,
	qty_after     INT
);`

// Event asks to take Qty of Item out of stock.
type Event struct {
	ID   string `json:"event_id"`
	Item string `json:"item"`
	Qty  int    `json:"qty"`
}

// ErrFenced is an attempt whose fencing token is older than one that
// already touched the event: its lease ran out and someone took over.
var ErrFenced = errors.New("stock: a newer holder has taken this event over")

// Hooks let a test crash the consumer at each point of the two-phase
// pattern (a hook that panics is a crash). Nil hooks do nothing.
type Hooks struct {
	AfterClaim, AfterEffect, AfterOutcome func(Event)
}

// Consumer handles events for one dedupd consumer name.
type Consumer struct {
	DB       *pgxpool.Pool
	Dedup    *client.Client
	Name     string
	LeaseTTL time.Duration
	Hooks    Hooks
}

// Handle takes e's quantity out of stock once, however often e is
// delivered, and returns the stock left after it (the stored result on a
// replay). An event that would take stock below zero is refused for good:
// the error is a *client.RejectedError with reason OUT_OF_STOCK, replayed
// on every redelivery. Another event with e's ID is ErrDigestMismatch.
func (c *Consumer) Handle(ctx context.Context, e Event) (left int, replayed bool, err error) {
	digest, err := client.DigestValue(e)
	if err != nil {
		return 0, false, err
	}
	res, err := c.Dedup.Do(ctx, c.Name, e.ID, digest, client.DoOptions{LeaseTTL: c.LeaseTTL, Owner: "inventory", MaxWait: time.Minute},
		func(ctx context.Context, a client.Attempt) ([]byte, error) {
			call(c.Hooks.AfterClaim, e)
			left, err := c.Apply(ctx, e, a.FencingToken)
			if err != nil {
				return nil, err
			}
			call(c.Hooks.AfterEffect, e)
			return []byte(strconv.Itoa(left)), nil
		})
	if err != nil {
		return 0, false, err
	}
	call(c.Hooks.AfterOutcome, e)
	left, err = strconv.Atoi(string(res.Result))
	return left, res.Replayed, err
}

func call(hook func(Event), e Event) {
	if hook != nil {
		hook(e)
	}
}

// Apply is the fenced write: in one transaction, raise the event's fence
// to token (refusing an older token), and take the stock unless an earlier
// attempt already did.
func (c *Consumer) Apply(ctx context.Context, e Event, token int64) (left int, err error) {
	err = pgx.BeginFunc(ctx, c.DB, func(tx pgx.Tx) error {
		applied, qtyAfter, err := fence(ctx, tx, e.ID, token)
		if err != nil || applied {
			left = qtyAfter
			return err
		}
		err = tx.QueryRow(ctx, `UPDATE stock SET qty = qty - $2 WHERE item = $1 AND qty >= $2 RETURNING qty`,
			e.Item, e.Qty).Scan(&left)
		if errors.Is(err, pgx.ErrNoRows) {
			return client.Terminal("OUT_OF_STOCK", fmt.Errorf("%s: fewer than %d %s in stock", e.ID, e.Qty, e.Item), nil)
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE applied_events SET applied = true, qty_after = $2 WHERE event_id = $1`, e.ID, left)
		return err
	})
	return left, err
}

// fence raises the event's fencing token to token and locks its row until
// the transaction ends; ErrFenced when a newer token got there first.
func fence(ctx context.Context, tx pgx.Tx, eventID string, token int64) (applied bool, qtyAfter int, err error) {
	var after *int
	err = tx.QueryRow(ctx, `
		INSERT INTO applied_events (event_id, fencing_token) VALUES ($1, $2)
		ON CONFLICT (event_id) DO UPDATE SET fencing_token = EXCLUDED.fencing_token
			WHERE applied_events.fencing_token <= EXCLUDED.fencing_token
		RETURNING applied, qty_after`, eventID, token).Scan(&applied, &after)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, 0, ErrFenced
	}
	if after != nil {
		qtyAfter = *after
	}
	return applied, qtyAfter, err
}

// Settled is one key a reconciliation run settled: Decision is
// "completed" (the stock was taken; Result is the stock left) or
// "released" (no stock was taken; the next delivery runs it).
type Settled struct {
	Key, Decision, Result string
}

// Reconcile settles every event whose claim stayed PENDING past its lease
// (see Reconciler) and returns one Settled per key it recorded a verdict
// for. On an error it returns, with it, the keys surely settled before.
func (c *Consumer) Reconcile(ctx context.Context) ([]Settled, error) {
	var decided []Settled
	r := c.Reconciler(func(s Settled) { decided = append(decided, s) })
	_, err := r.Run(ctx)
	if err != nil && len(decided) > 0 {
		// Run stops at the first error, and it only lists the next key
		// once the previous verdict is recorded: every verdict but the
		// last is stored, the last one may not be.
		decided = decided[:len(decided)-1]
	}
	return decided, err
}

// Reconciler settles events whose claim stayed PENDING past its lease: it
// takes the key over, raises the event's fence to the new token (so the
// stalled holder can no longer apply it), and completes the key if the
// stock was taken, or releases it for the next delivery if not. Each
// verdict is passed to the optional decided functions before dedupd
// records it.
func (c *Consumer) Reconciler(decided ...func(Settled)) *client.Reconciler {
	return &client.Reconciler{Client: c.Dedup, Consumer: c.Name, Owner: "inventory-reconciler", LeaseTTL: c.LeaseTTL,
		Check: func(ctx context.Context, a client.Attempt) (client.Verdict, error) {
			var verdict client.Verdict
			s := Settled{Key: a.Record.GetKey()}
			err := pgx.BeginFunc(ctx, c.DB, func(tx pgx.Tx) error {
				applied, qtyAfter, err := fence(ctx, tx, s.Key, a.FencingToken)
				switch {
				case err != nil:
					return err
				case applied:
					s.Decision, s.Result = "completed", strconv.Itoa(qtyAfter)
					verdict = client.CompleteWith([]byte(s.Result))
				default:
					s.Decision, s.Result = "released", "NOT_APPLIED: no stock was taken; redeliver"
					verdict = client.Release("NOT_APPLIED", "no stock was taken; redeliver")
				}
				return nil
			})
			if err == nil {
				for _, f := range decided {
					f(s)
				}
			}
			return verdict, err
		}}
}
