package store

import (
	"cmp"
	"context"
	"strings"
	"time"
)

// Batches.
//
// A consumer that polls in batches (a Kafka poll, an SQS receive) claims,
// finishes and looks up many keys at once. A batch method pays once for
// what a lone call pays per key: the round trip to the database, the
// statement, the commit. It is not a transaction: each item succeeds or
// fails on its own, and its answer is exactly what the lone call of that
// item would have returned at some moment during the batch.

// BatchParams are the inputs of Store.ApplyBatch: the writes to apply, each
// a ClaimParams, CompleteParams, RejectParams or ExtendLeaseParams.
type BatchParams struct {
	Commands []Command
}

// ItemResult is the answer to one command of a batch: what the lone call
// would have returned. Err is the item's own error, with the same meaning
// as the lone call's; when it is set, the other fields are zero.
type ItemResult struct {
	// Outcome and RetryAfter are set for claims, as in ClaimResult.
	Outcome    Outcome
	RetryAfter time.Duration
	// Record is the key's record after the command.
	Record Record
	Err    error
}

// LookupBatchParams are the inputs of Store.LookupBatch.
type LookupBatchParams struct {
	Consumer string
	Keys     []string
	// Single marks the lookup of one key that Lookup is: observers name it
	// Lookup rather than LookupBatch. Stores ignore it.
	Single bool
}

// LookupResult is the answer to one key of a LookupBatch: its record, or
// ErrNotFound (or the error that kept the store from reading it).
type LookupResult struct {
	Record Record
	Err    error
}

// Batcher is the part of the Store contract for batches.
type Batcher interface {
	// ApplyBatch applies each command as store.Apply decides, and returns
	// one result per command, in order. It keeps every guarantee of the
	// lone calls, item by item:
	//
	//   - Each item's result is what its lone call (Claim, Complete, Reject
	//     or ExtendLease) would have returned at some moment between the
	//     start and the end of ApplyBatch, errors included. Exactly one
	//     Acquired among any number of concurrent claims of a free key,
	//     whether they come in batches or alone.
	//   - Commands on one key take effect in their order in the batch, each
	//     seeing the effect of those before it: a key named twice answers
	//     its second command as a lone call arriving just after the first
	//     would (IN_PROGRESS behind an ACQUIRED claim, the stored record for
	//     a repeated Complete).
	//   - It is not a transaction. A refusal of one item (ErrDigestMismatch,
	//     ErrLeaseLost, ErrAlreadyFinished) changes nothing of that item and
	//     nothing of the others. ErrUnavailable or the context's error on an
	//     item means that item's outcome is unknown, as for a lone call; the
	//     other items' results stand.
	//   - Writes to many keys take the keys in one global order (consumer,
	//     then key, bytewise), so that overlapping batches in flight queue
	//     behind one another and never deadlock.
	//
	// An empty batch returns an empty result.
	ApplyBatch(ctx context.Context, p BatchParams) []ItemResult

	// LookupBatch returns the record of each key, in order: ErrNotFound for
	// a key that is absent or whose record has expired. Each result is what
	// Lookup would have returned at some moment during the call.
	LookupBatch(ctx context.Context, p LookupBatchParams) []LookupResult
}

// KeyOf returns the consumer and key a command writes.
func KeyOf(cmd Command) (consumer, key string) { return cmd.Target() }

// CompareKeys is the one global order of keys in which multi-key writes
// take their rows: by consumer, then by key, both bytewise.
func CompareKeys(consumerA, keyA, consumerB, keyB string) int {
	return cmp.Or(strings.Compare(consumerA, consumerB), strings.Compare(keyA, keyB))
}

// Rounds splits the commands of a batch into rounds in which no key appears
// twice: round r holds the (r+1)-th command on each key, as indexes into
// cmds in their batch order. Running the rounds one after another applies
// every key's commands in batch order, so a store that writes one round in
// a single statement keeps ApplyBatch's ordering rule.
func Rounds(cmds []Command) [][]int {
	seen := make(map[[2]string]int, len(cmds))
	var rounds [][]int
	for i, cmd := range cmds {
		c, k := KeyOf(cmd)
		r := seen[[2]string{c, k}]
		seen[[2]string{c, k}] = r + 1
		if r == len(rounds) {
			rounds = append(rounds, nil)
		}
		rounds[r] = append(rounds[r], i)
	}
	return rounds
}

// FailedBatch is the results of a batch of n commands that failed as a
// whole, before any ran: each gets err.
func FailedBatch(n int, err error) []ItemResult {
	results := make([]ItemResult, n)
	for i := range results {
		results[i].Err = err
	}
	return results
}

// ResultOf turns a decision of Apply, or its error, into an item's result.
func ResultOf(d Decision, err error) ItemResult {
	if err != nil {
		return ItemResult{Err: err}
	}
	return ItemResult{Outcome: d.Outcome, RetryAfter: d.RetryAfter, Record: d.Record}
}
