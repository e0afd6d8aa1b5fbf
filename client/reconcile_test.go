package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/client/dedupdtest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// TestReconciler settles expired claims listed through ListRecords on a
// real dedupd.
func TestReconciler(t *testing.T) {
	dedupdtest.ForEach(t, nil, func(t *testing.T, addr string) {
		c, ctx := newClient(t, addr), testContext(t)
		effectDone := map[string]bool{"done": true, "not-done": false, "refused": false}
		for key := range effectDone {
			if _, err := c.Claim(ctx, "shop", key, client.Digest([]byte(key)), client.ClaimOptions{LeaseTTL: 100 * time.Millisecond}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.Claim(ctx, "shop", "live", nil, client.ClaimOptions{LeaseTTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the short leases to run out", func() bool {
			r, err := c.Lookup(ctx, "shop", "refused")
			return err == nil && time.Now().After(r.GetLeaseExpiresAt().AsTime().Add(50*time.Millisecond))
		})

		r := &client.Reconciler{Client: c, Consumer: "shop", Owner: "reconciler", PageSize: 1,
			Check: func(ctx context.Context, a client.Attempt) (client.Verdict, error) {
				if a.FencingToken != 2 {
					t.Errorf("check of %s under token %d, want the taken-over token 2", a.Record.GetKey(), a.FencingToken)
				}
				switch key := a.Record.GetKey(); {
				case key == "refused":
					return client.RejectWith("INVALID", "bad event", nil), nil
				case effectDone[key]:
					return client.CompleteWith([]byte("found in our system")), nil
				}
				return client.Release("NOT_APPLIED", "effect missing"), nil
			}}
		report, err := r.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := (client.ReconcileReport{Completed: 1, Rejected: 1, Released: 1}); report != want {
			t.Fatalf("report = %+v, want %+v", report, want)
		}
		wantStates := map[string]dedupv1.State{
			"done": dedupv1.State_STATE_COMPLETED, "refused": dedupv1.State_STATE_REJECTED,
			"not-done": dedupv1.State_STATE_RELEASED, "live": dedupv1.State_STATE_PENDING,
		}
		for key, want := range wantStates {
			if rec, err := c.Lookup(ctx, "shop", key); err != nil || rec.GetState() != want {
				t.Errorf("%s: %v, %v; want %s", key, rec.GetState(), err, want)
			}
		}
		again, err := r.Run(ctx)
		if err != nil || again != (client.ReconcileReport{}) {
			t.Fatalf("second run = %+v, %v; want nothing left to do", again, err)
		}
	})
}

// A verdict the server refuses is Run's error and is not counted as
// settled: here the record is deleted while Check runs, so the
// reconciler's Complete is refused with LEASE_LOST.
func TestReconcilerCountsOnlyRecordedVerdicts(t *testing.T) {
	dedupdtest.ForEach(t, nil, func(t *testing.T, addr string) {
		c, ctx := newClient(t, addr), testContext(t)
		if _, err := c.Claim(ctx, "shop", "k", client.Digest([]byte("k")), client.ClaimOptions{LeaseTTL: 100 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the lease to run out", func() bool {
			r, err := c.Lookup(ctx, "shop", "k")
			return err == nil && time.Now().After(r.GetLeaseExpiresAt().AsTime().Add(50*time.Millisecond))
		})
		r := &client.Reconciler{Client: c, Consumer: "shop", Owner: "reconciler",
			Check: func(ctx context.Context, a client.Attempt) (client.Verdict, error) {
				if _, err := c.Admin().DeleteRecord(ctx, &dedupv1.DeleteRecordRequest{Consumer: "shop", Key: "k"}); err != nil {
					t.Fatal(err)
				}
				return client.CompleteWith([]byte("found")), nil
			}}
		report, err := r.Run(ctx)
		if !errors.Is(err, client.ErrLeaseLost) {
			t.Fatalf("Run error = %v, want ErrLeaseLost", err)
		}
		if report != (client.ReconcileReport{}) {
			t.Fatalf("report = %+v, want nothing settled", report)
		}
	})
}

// TestRecordsPages needs ListRecords too (issue 3).
func TestRecordsPages(t *testing.T) {
	dedupdtest.ForEach(t, nil, func(t *testing.T, addr string) {
		c, ctx := newClient(t, addr), testContext(t)
		for _, key := range []string{"a", "b", "c", "d", "e"} {
			if _, err := c.Claim(ctx, "shop", key, nil, client.ClaimOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		var keys []string
		for rec, err := range c.Records(ctx, &dedupv1.ListRecordsRequest{Consumer: "shop", PageSize: 2}) {
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, rec.GetKey())
		}
		if len(keys) != 5 || keys[0] != "a" || keys[4] != "e" {
			t.Fatalf("listed %v, want a..e in key order", keys)
		}
	})
}
