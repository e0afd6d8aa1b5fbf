package api

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

// bigResultClient serves the API with results of up to 1 MiB allowed.
func bigResultClient(t *testing.T) dedupv1.DedupServiceClient {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	defaults := policy.Defaults{Policy: testPolicy, Limits: policy.Limits{MaxLeaseTTL: time.Hour, MaxResultBytes: 1 << 20}}
	conn := serveWith(t, st, 0, defaults)
	return dedupv1.NewDedupServiceClient(conn)
}

// A batch replaying eight stored results of 1 MiB each still reaches a
// client left at its defaults: the first three results, all that fit in
// 4 MiB, come whole and in order; the rest come without their result,
// marked result_omitted, and Lookup reads them.
func TestBatchReplyFitsADefaultClient(t *testing.T) {
	c := bigResultClient(t)
	ctx := context.Background()
	const stored = 8
	results := make([][]byte, stored)
	keys := make([]string, stored)
	for i := range stored {
		keys[i] = string(rune('a' + i))
		results[i] = bytes.Repeat([]byte{byte(i + 1)}, 1<<20)
		if _, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "orders", Key: keys[i], Digest: []byte("d")}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "orders", Key: keys[i], FencingToken: 1, Result: results[i]}); err != nil {
			t.Fatal(err)
		}
	}
	items := make([]*dedupv1.ClaimBatchItem, 0, stored+1)
	mismatched := make([]*dedupv1.ClaimBatchItem, 0, stored)
	for _, k := range keys {
		items = append(items, &dedupv1.ClaimBatchItem{Key: k, Digest: []byte("d")})
		mismatched = append(mismatched, &dedupv1.ClaimBatchItem{Key: k, Digest: []byte("other")})
	}
	items = append(items, &dedupv1.ClaimBatchItem{Key: "fresh", Digest: []byte("d")})

	resp, err := c.ClaimBatch(ctx, &dedupv1.ClaimBatchRequest{Consumer: "orders", Items: items})
	if err != nil {
		t.Fatalf("ClaimBatch replaying 8 MiB: %v", err)
	}
	for i, res := range resp.GetResults()[:stored] {
		rec := res.GetClaim().GetRecord()
		if res.GetClaim().GetOutcome() != dedupv1.Outcome_OUTCOME_COMPLETED {
			t.Fatalf("item %d: %v, want COMPLETED", i, res.GetClaim().GetOutcome())
		}
		whole := i < 3
		if res.GetResultOmitted() == whole || whole != bytes.Equal(rec.GetResult(), results[i]) || !whole && len(rec.GetResult()) != 0 {
			t.Errorf("item %d: result_omitted %v with %d result bytes, want whole=%v", i, res.GetResultOmitted(), len(rec.GetResult()), whole)
		}
	}
	if last := resp.GetResults()[stored]; last.GetClaim().GetOutcome() != dedupv1.Outcome_OUTCOME_ACQUIRED || last.GetResultOmitted() {
		t.Errorf("fresh key: %v, want ACQUIRED with nothing omitted", last)
	}

	conflicts, err := c.ClaimBatch(ctx, &dedupv1.ClaimBatchRequest{Consumer: "orders", Items: mismatched})
	if err != nil {
		t.Fatalf("ClaimBatch of 8 conflicts carrying 8 MiB: %v", err)
	}
	for i, res := range conflicts.GetResults() {
		rec := storedRecord(t, res.GetError())
		whole := i < 3
		if res.GetResultOmitted() == whole || whole != bytes.Equal(rec.GetResult(), results[i]) {
			t.Errorf("conflict %d: result_omitted %v with %d result bytes, want whole=%v", i, res.GetResultOmitted(), len(rec.GetResult()), whole)
		}
	}

	looked, err := c.LookupBatch(ctx, &dedupv1.LookupBatchRequest{Consumer: "orders", Keys: keys})
	if err != nil {
		t.Fatalf("LookupBatch of 8 MiB: %v", err)
	}
	for i, res := range looked.GetResults() {
		if whole := i < 3; res.GetResultOmitted() == whole {
			t.Errorf("lookup %d: result_omitted %v, want %v", i, res.GetResultOmitted(), !whole)
		}
	}
	one, err := c.Lookup(ctx, &dedupv1.LookupRequest{Consumer: "orders", Key: keys[stored-1]})
	if err != nil || !bytes.Equal(one.GetRecord().GetResult(), results[stored-1]) {
		t.Errorf("Lookup of an omitted result: %d bytes, %v", len(one.GetRecord().GetResult()), err)
	}
}

// The largest batch the server takes, every item carrying the largest
// record a caller can make it hold and every value in the form that takes
// most bytes in an error message, fits in MaxReplyBytes once its payloads
// are left out: the rule holds for any batch.
func TestWorstCaseBatchReplyFits(t *testing.T) {
	wide := func(n int) string { return strings.Repeat("\u0085", n/2) } // 2 bytes each, quoted as 6 in messages
	rec := store.Record{
		Consumer: strings.Repeat("c", 128), Key: wide(MaxKeyBytes), State: store.Rejected,
		Digest: bytes.Repeat([]byte{0xff}, MaxDigestBytes), FencingToken: 1 << 62, Attempts: 1 << 62,
		Owner: wide(MaxOwnerBytes), Result: make([]byte, 64<<10),
		Rejection: &store.Rejection{Reason: wide(MaxReasonBytes), Message: wide(MaxMessageBytes),
			Detail: make([]byte, 64<<10), Retryable: true},
		CreatedAt: time.Now(), UpdatedAt: time.Now(), LeaseExpiresAt: time.Now(), ExpiresAt: time.Now(),
	}
	svc := &DedupService{log: slog.New(slog.DiscardHandler)}
	for name, res := range map[string]store.ItemResult{
		"conflict":  {Err: &store.ConflictError{Err: store.ErrDigestMismatch, Record: rec}},
		"replay":    {Outcome: store.AlreadyRejected, Record: rec},
		"rate":      {Err: &rpcerrors.RetryAfterError{Err: rpcerrors.ErrRateLimited, After: time.Hour}},
		"bad field": {Err: &rpcerrors.FieldError{Field: "items[999].key", Problem: "is " + wide(MaxKeyBytes)}},
	} {
		items := make([]batchItem, MaxBatchItemsCeiling)
		for i := range items {
			items[i] = batchItem{key: rec.Key, res: res}
		}
		claims := &dedupv1.ClaimBatchResponse{Results: svc.claimResults(context.Background(), rec.Consumer, items)}
		records := &dedupv1.FinishBatchResponse{Results: svc.recordResults(context.Background(), rec.Consumer, items)}
		for call, reply := range map[string]proto.Message{"ClaimBatch": claims, "FinishBatch": records} {
			if size := proto.Size(reply); size > MaxReplyBytes {
				t.Errorf("%s of %d %s items: reply of %d bytes, more than %d", call, MaxBatchItemsCeiling, name, size, MaxReplyBytes)
			}
		}
	}
}

// Answers past MaxReplyBytes of payload lose it as they arrive, so a batch
// of large replays never holds more of them than its reply could carry.
func TestPayloadBudgetDropsAsAnswersArrive(t *testing.T) {
	var budget payloadBudget
	big := store.Record{Key: "k", Result: make([]byte, 1<<20)}
	items := []batchItem{
		{res: store.ItemResult{Record: big}}, {res: store.ItemResult{Record: big}},
		{res: store.ItemResult{Record: store.Record{Key: "none"}}},
		{res: store.ItemResult{Record: big}}, {res: store.ItemResult{Record: big}},
		{res: store.ItemResult{Err: &store.ConflictError{Err: store.ErrDigestMismatch, Record: big}}},
		{res: store.ItemResult{Record: big}},
	}
	for i := range items {
		budget.keep(&items[i])
	}
	for i, it := range items {
		rec := it.res.Record
		if conflict, ok := errors.AsType[*store.ConflictError](it.res.Err); ok {
			rec = conflict.Record
		}
		// Four MiB fit (items 0, 1, 3, 4); the empty record has nothing to drop.
		wantOmitted, wantBytes := i >= 5, 0
		if i < 5 && i != 2 {
			wantBytes = 1 << 20
		}
		if it.omitted != wantOmitted || len(rec.Result) != wantBytes {
			t.Errorf("item %d: omitted %v with %d result bytes, want %v with %d", i, it.omitted, len(rec.Result), wantOmitted, wantBytes)
		}
	}
}
