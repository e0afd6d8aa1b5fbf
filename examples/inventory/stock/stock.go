// Package stock is the library half of the inventory example: a consumer
// that takes items out of stock in PostgreSQL once per event, using dedupd
// for the dedup record and a receipt (client/receipts) as its own fence.
//
// The stock change and the event's receipt commit in one transaction. A
// holder that finds a live receipt (the stock was already taken under
// another holder) rolls its transaction back, stock change included, and a
// takeover settles from the receipt instead of taking stock twice. That is
// what turns dedupd's at-most-one-holder into exactly one effect across
// crashes.
package stock

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/client/receipts"
)

// Schema creates the consumer's stock table; Migrate adds the receipts'.
const Schema = `
CREATE TABLE IF NOT EXISTS stock (
	item TEXT PRIMARY KEY,
	qty  INT NOT NULL CHECK (qty >= 0)
);`

// Migrate creates the stock table and runs the receipts' migration.
func Migrate(ctx context.Context, db *pgxpool.Pool) error {
	if _, err := db.Exec(ctx, Schema); err != nil {
		return err
	}
	return receipts.Migrate(ctx, receipts.PgxDB(db, pgx.TxOptions{}), receipts.Postgres, "")
}

// Event asks to take Qty of Item out of stock.
type Event struct {
	ID   string `json:"event_id"`
	Item string `json:"item"`
	Qty  int    `json:"qty"`
}

// ErrFenced is an attempt that found the event already applied under
// another holder (a live receipt): its transaction rolled back.
var ErrFenced = receipts.ErrStale

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
	// ReceiptTTL is how long a receipt lives: the consumer's completed
	// retention. When zero it is read once from dedupd's policy.
	ReceiptTTL time.Duration
	Hooks      Hooks

	mu sync.Mutex
}

// receipts is the consumer's receipt helper.
func (c *Consumer) receipts(ctx context.Context) (*receipts.Receipts, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ReceiptTTL == 0 {
		ttl, err := receipts.TTLFromPolicy(ctx, c.Dedup, c.Name)
		if err != nil {
			return nil, err
		}
		c.ReceiptTTL = ttl
	}
	return &receipts.Receipts{DB: receipts.PgxDB(c.DB, pgx.TxOptions{}), Dialect: receipts.Postgres,
		Consumer: c.Name, TTL: c.ReceiptTTL}, nil
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
	r, err := c.receipts(ctx)
	if err != nil {
		return 0, false, err
	}
	res, err := c.Dedup.Do(ctx, c.Name, e.ID, digest, client.DoOptions{LeaseTTL: c.LeaseTTL, Owner: "inventory", MaxWait: time.Minute,
		Settle: r.Settle},
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

// Apply takes the stock and writes the event's receipt under token, in one
// transaction; ErrFenced (and nothing taken) when the event was already
// applied under another holder.
func (c *Consumer) Apply(ctx context.Context, e Event, token int64) (left int, err error) {
	r, err := c.receipts(ctx)
	if err != nil {
		return 0, err
	}
	_, err = r.Run(ctx, e.ID, token, func(ctx context.Context, tx receipts.Tx) ([]byte, error) {
		found, err := tx.QueryRow(ctx, `UPDATE stock SET qty = qty - $2 WHERE item = $1 AND qty >= $2 RETURNING qty`,
			[]any{e.Item, e.Qty}, &left)
		switch {
		case err != nil:
			return nil, err
		case !found:
			return nil, client.Terminal("OUT_OF_STOCK", fmt.Errorf("%s: fewer than %d %s in stock", e.ID, e.Qty, e.Item), nil)
		}
		return []byte(strconv.Itoa(left)), nil
	})
	return left, err
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
// takes the key over and completes it with the receipt's result if the
// stock was taken, or releases it for the next delivery if not (a stalled
// holder that commits later only makes that delivery settle from its
// receipt). Each
// verdict is passed to the optional decided functions before dedupd
// records it.
func (c *Consumer) Reconciler(decided ...func(Settled)) *client.Reconciler {
	return &client.Reconciler{Client: c.Dedup, Consumer: c.Name, Owner: "inventory-reconciler", LeaseTTL: c.LeaseTTL,
		Check: func(ctx context.Context, a client.Attempt) (client.Verdict, error) {
			s := Settled{Key: a.Record.GetKey()}
			r, err := c.receipts(ctx)
			if err != nil {
				return client.Verdict{}, err
			}
			result, found, err := r.Settle(ctx, a)
			if err != nil {
				return client.Verdict{}, err
			}
			verdict := client.Release("NOT_APPLIED", "no stock was taken; redeliver")
			s.Decision, s.Result = "released", "NOT_APPLIED: no stock was taken; redeliver"
			if found {
				s.Decision, s.Result = "completed", string(result)
				verdict = client.CompleteWith(result)
			}
			for _, f := range decided {
				f(s)
			}
			return verdict, nil
		}}
}
