package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/dedupd/dedupd/client"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// What docs/operations.md promises about replicas, at the defaults the
// replicas run with (serve's flags), and the slack a loaded machine gets
// on top: a bound is checked against the documented value, never a tighter
// one.
const (
	docReplayCacheTTL  = 10 * time.Second // --replay-cache-ttl: a deleted record replays elsewhere for up to it
	docPolicyCacheTTL  = 5 * time.Second  // --policy-cache-ttl: a policy change applies elsewhere within it
	docClaimWaitPoll   = time.Second      // --claim-wait-poll: a waiting claim sees another replica's outcome within it
	stalenessSlack     = 5 * time.Second
	wakeUpSlack        = 2 * time.Second
	wakeUpRounds       = 5
	stalenessPollEvery = 20 * time.Millisecond
)

// replicaStaleness measures, with every replica up, how long replica 1
// answers from its caches after a change made through replica 0.
func replicaStaleness(t *testing.T, c *replicaCluster) {
	ctx := context.Background()
	a, b := c.clients[0], c.clients[1]

	// A deleted record, completed again with another result through
	// replica 0: replica 1 replays the old result from its replay cache.
	const consumer, key = "replica-stale", "deleted-and-redone"
	complete(t, a, consumer, key, "old result")
	for range 2 { // the replay fills replica 1's cache
		if got, err := b.Claim(ctx, consumer, key, nil, client.ClaimOptions{}); err != nil || string(got.Record.GetResult()) != "old result" {
			t.Fatalf("replica 1's replay before the delete: %+v, %v", got, err)
		}
	}
	if _, err := a.Admin().DeleteRecord(ctx, &dedupv1.DeleteRecordRequest{Consumer: consumer, Key: key}); err != nil {
		t.Fatal(err)
	}
	complete(t, a, consumer, key, "new result")
	stored := time.Now()
	stale := 0
	var delay time.Duration
	for {
		got, err := b.Claim(ctx, consumer, key, nil, client.ClaimOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r := string(got.Record.GetResult()); r != "old result" {
			delay = time.Since(stored)
			if r != "new result" || got.Outcome != client.Completed {
				t.Errorf("replica 1 answered %v %q after the old result, want the new one", got.Outcome, r)
			}
			break
		}
		stale++
		if time.Since(stored) > docReplayCacheTTL+stalenessSlack {
			t.Fatalf("replica 1 still replays the deleted record's result %v after the new one was stored (--replay-cache-ttl %v)",
				time.Since(stored), docReplayCacheTTL)
		}
		time.Sleep(stalenessPollEvery)
	}
	figures(t, "delete staleness: replica 1 replayed the deleted record's old result %d times for %v after the new result was stored "+
		"through replica 0 (documented: up to --replay-cache-ttl %v)", stale, delay.Round(time.Millisecond), docReplayCacheTTL)

	policyStaleness(t, c)
	wakeUp(t, c)
}

// complete claims key through cl and completes it with result.
func complete(t *testing.T, cl *client.Client, consumer, key, result string) {
	t.Helper()
	ctx := context.Background()
	got, err := cl.Claim(ctx, consumer, key, nil, client.ClaimOptions{})
	if err != nil || got.Outcome != client.Acquired {
		t.Fatalf("claim of %s: %v, %v", key, got.Outcome, err)
	}
	if _, err := cl.Complete(ctx, consumer, key, got.FencingToken, []byte(result)); err != nil {
		t.Fatal(err)
	}
}

// policyStaleness: require_digest set through replica 0; replica 1 goes on
// accepting claims without a digest until its policy cache refreshes.
func policyStaleness(t *testing.T, c *replicaCluster) {
	ctx := context.Background()
	const consumer = "replica-policy"
	b := c.clients[1]
	if _, err := b.Claim(ctx, consumer, "before", nil, client.ClaimOptions{}); err != nil {
		t.Fatal(err) // replica 1 now has the consumer's (default) policy cached
	}
	if _, err := c.clients[0].Admin().SetPolicy(ctx, &dedupv1.SetPolicyRequest{
		Policy: &dedupv1.Policy{Consumer: consumer, RequireDigest: true}}); err != nil {
		t.Fatal(err)
	}
	set := time.Now()
	accepted := 0
	for i := 0; ; i++ {
		_, err := b.Claim(ctx, consumer, fmt.Sprintf("after-%d", i), nil, client.ClaimOptions{})
		if ce, ok := errors.AsType[*client.Error](err); ok && ce.Reason == "INVALID_FIELD" {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		accepted++
		if time.Since(set) > docPolicyCacheTTL+stalenessSlack {
			t.Fatalf("replica 1 still ignores the policy set through replica 0 after %v (--policy-cache-ttl %v)", time.Since(set), docPolicyCacheTTL)
		}
		time.Sleep(stalenessPollEvery)
	}
	figures(t, "policy staleness: replica 1 accepted %d claims without a digest for %v after require_digest was set through replica 0 "+
		"(documented: within --policy-cache-ttl %v)", accepted, time.Since(set).Round(time.Millisecond), docPolicyCacheTTL)
}

// wakeUp: a claim waiting on replica 1 for a key held through replica 0
// answers with the outcome completed through replica 0.
func wakeUp(t *testing.T, c *replicaCluster) {
	ctx := context.Background()
	const consumer = "replica-wake"
	a, b := c.clients[0], c.clients[1]
	var delays []time.Duration
	for i := range wakeUpRounds {
		key := fmt.Sprintf("wake-%d", i)
		held, err := a.Claim(ctx, consumer, key, nil, client.ClaimOptions{LeaseTTL: time.Minute})
		if err != nil || held.Outcome != client.Acquired {
			t.Fatalf("claim of %s: %v, %v", key, held.Outcome, err)
		}
		type answer struct {
			res client.ClaimResult
			err error
			at  time.Time
		}
		waited := make(chan answer, 1)
		go func() {
			res, err := b.Claim(ctx, consumer, key, nil, client.ClaimOptions{Wait: 20 * time.Second})
			waited <- answer{res, err, time.Now()}
		}()
		time.Sleep(300 * time.Millisecond) // the waiter is on replica 1 by then, mostly; earlier is fine too
		if _, err := a.Complete(ctx, consumer, key, held.FencingToken, []byte("done")); err != nil {
			t.Fatal(err)
		}
		completed := time.Now()
		got := <-waited
		if got.err != nil || got.res.Outcome != client.Completed || string(got.res.Record.GetResult()) != "done" {
			t.Fatalf("the claim waiting on replica 1 answered %v %q, %v; want COMPLETED done", got.res.Outcome, got.res.Record.GetResult(), got.err)
		}
		delays = append(delays, max(got.at.Sub(completed), 0))
	}
	slices.Sort(delays)
	worst := delays[len(delays)-1]
	figures(t, "wake-up: a claim waiting on replica 1 saw the outcome completed through replica 0 after %v (median), %v (worst of %d) "+
		"(documented: within --claim-wait-poll %v)", delays[len(delays)/2].Round(time.Millisecond), worst.Round(time.Millisecond), wakeUpRounds, docClaimWaitPoll)
	if worst > docClaimWaitPoll+wakeUpSlack {
		t.Errorf("a waiting claim on another replica woke %v after the outcome was stored, over --claim-wait-poll %v", worst, docClaimWaitPoll)
	}
}
