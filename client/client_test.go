package client_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/client/dedupdtest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

func TestRPCOutcomes(t *testing.T) {
	dedupdtest.ForEach(t, nil, func(t *testing.T, addr string) {
		c, ctx := newClient(t, addr), testContext(t)
		digest := client.Digest([]byte("order 1"))

		claim, err := c.Claim(ctx, "orders", "k1", digest, client.ClaimOptions{LeaseTTL: time.Minute, Owner: "w1"})
		if err != nil || claim.Outcome != client.Acquired || claim.FencingToken != 1 {
			t.Fatalf("first claim = %+v, %v; want ACQUIRED with token 1", claim, err)
		}
		busy, err := c.Claim(ctx, "orders", "k1", digest, client.ClaimOptions{Owner: "w2"})
		if err != nil || busy.Outcome != client.InProgress || busy.RetryAfter <= 0 || busy.Record.GetOwner() != "w1" {
			t.Fatalf("claim while held = %+v, %v; want IN_PROGRESS owned by w1 with retry_after", busy, err)
		}
		before := claim.Record.GetLeaseExpiresAt().AsTime()
		ext, err := c.ExtendLease(ctx, "orders", "k1", 1, time.Hour)
		if err != nil || !ext.GetLeaseExpiresAt().AsTime().After(before) {
			t.Fatalf("ExtendLease = %v, %v; want a later lease than %v", ext, err, before)
		}
		rec, err := c.Complete(ctx, "orders", "k1", 1, []byte("ok"))
		if err != nil || rec.GetState() != dedupv1.State_STATE_COMPLETED {
			t.Fatalf("Complete = %v, %v", rec, err)
		}
		again, err := c.Complete(ctx, "orders", "k1", 1, []byte("ok"))
		if err != nil || !bytes.Equal(again.GetResult(), []byte("ok")) {
			t.Fatalf("repeated Complete = %v, %v; want the same record", again, err)
		}
		replay, err := c.Claim(ctx, "orders", "k1", digest, client.ClaimOptions{})
		if err != nil || replay.Outcome != client.Completed || string(replay.Record.GetResult()) != "ok" {
			t.Fatalf("replay = %+v, %v; want COMPLETED with result ok", replay, err)
		}
		looked, err := c.Lookup(ctx, "orders", "k1")
		if err != nil || looked.GetFencingToken() != 1 {
			t.Fatalf("Lookup = %v, %v", looked, err)
		}

		claim, _ = c.Claim(ctx, "orders", "k2", digest, client.ClaimOptions{})
		if _, err := c.Reject(ctx, "orders", "k2", claim.FencingToken, client.Rejection{Reason: "BUSY", Retryable: true}); err != nil {
			t.Fatal(err)
		}
		retry, err := c.Claim(ctx, "orders", "k2", digest, client.ClaimOptions{})
		if err != nil || retry.Outcome != client.Acquired || retry.FencingToken != 2 || retry.Record.GetAttempts() != 2 {
			t.Fatalf("claim after release = %+v, %v; want ACQUIRED with token 2", retry, err)
		}
		if _, err := c.Reject(ctx, "orders", "k2", 2, client.Rejection{Reason: "OUT_OF_STOCK", Message: "none left", Detail: []byte{1}}); err != nil {
			t.Fatal(err)
		}
		rejected, err := c.Claim(ctx, "orders", "k2", digest, client.ClaimOptions{})
		if err != nil || rejected.Outcome != client.Rejected || rejected.Record.GetRejection().GetReason() != "OUT_OF_STOCK" {
			t.Fatalf("claim of rejected key = %+v, %v; want REJECTED OUT_OF_STOCK", rejected, err)
		}
	})
}

func TestRPCErrors(t *testing.T) {
	dedupdtest.ForEach(t, nil, func(t *testing.T, addr string) {
		c, ctx := newClient(t, addr), testContext(t)
		digest := client.Digest([]byte("a"))
		claim, err := c.Claim(ctx, "orders", "k", digest, client.ClaimOptions{LeaseTTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		_, errStale := c.Complete(ctx, "orders", "k", claim.FencingToken+1, nil)
		if _, err := c.Complete(ctx, "orders", "k", claim.FencingToken, []byte("first")); err != nil {
			t.Fatal(err)
		}
		_, errMismatch := c.Claim(ctx, "orders", "k", client.Digest([]byte("b")), client.ClaimOptions{})
		_, errFinished := c.Complete(ctx, "orders", "k", claim.FencingToken, []byte("second"))
		_, errExtend := c.ExtendLease(ctx, "orders", "k", claim.FencingToken, 0)
		_, errNotFound := c.Lookup(ctx, "orders", "missing")
		_, errInvalid := c.Claim(ctx, "Not A Consumer", "k", digest, client.ClaimOptions{})

		tests := []struct {
			name       string
			err        error
			sentinel   error
			code       codes.Code
			reason     string
			withRecord bool
		}{
			{"stale token", errStale, client.ErrLeaseLost, codes.Aborted, "LEASE_LOST", true},
			{"digest mismatch", errMismatch, client.ErrDigestMismatch, codes.FailedPrecondition, "DIGEST_MISMATCH", true},
			{"other result", errFinished, client.ErrAlreadyFinished, codes.FailedPrecondition, "ALREADY_FINISHED", true},
			{"extend finished", errExtend, client.ErrAlreadyFinished, codes.FailedPrecondition, "ALREADY_FINISHED", true},
			{"not found", errNotFound, client.ErrNotFound, codes.NotFound, "RECORD_NOT_FOUND", false},
			{"invalid consumer", errInvalid, client.ErrInvalidArgument, codes.InvalidArgument, "INVALID_FIELD", false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if !errors.Is(tt.err, tt.sentinel) {
					t.Fatalf("error %v is not %v", tt.err, tt.sentinel)
				}
				var e *client.Error
				if !errors.As(tt.err, &e) || e.Reason != tt.reason || e.Code != tt.code || status.Code(tt.err) != tt.code {
					t.Fatalf("error %#v: want code %s reason %s", e, tt.code, tt.reason)
				}
				if tt.withRecord && (e.Record == nil || e.Record.GetKey() != "k" || e.Record.GetFencingToken() != claim.FencingToken) {
					t.Fatalf("error carries record %v, want the stored one", e.Record)
				}
				if !tt.withRecord && e.Record != nil {
					t.Fatalf("error carries record %v, want none", e.Record)
				}
			})
		}
		var e *client.Error
		if errors.As(errInvalid, &e); e.Field != "consumer" {
			t.Fatalf("invalid field = %q, want consumer", e.Field)
		}
	})
}

// The connection a Client hands out names its target, as the bench's
// report needs (dedupctl bench failed with "no dedupd address" without it).
func TestConnNamesItsTarget(t *testing.T) {
	c := newClient(t, "127.0.0.1:7")
	named, ok := c.Conn().(interface{ Target() string })
	if !ok || named.Target() != "127.0.0.1:7" {
		t.Fatalf("Conn() = %T, target %v; want one naming 127.0.0.1:7", c.Conn(), ok)
	}
}
