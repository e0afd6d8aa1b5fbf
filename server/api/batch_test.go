package api

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

// answer is what a caller can tell apart in the answer to one claim or
// finishing call: the outcome, the record's state and token, or the error's
// code, reason and field.
type answer struct {
	outcome      dedupv1.Outcome
	state        dedupv1.State
	token        int64
	code         codes.Code
	reason       string
	field        string
	resultLength int
}

func answerOfError(err *status.Status) answer {
	a := answer{code: err.Code()}
	for _, d := range err.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			a.reason, a.field = info.GetReason(), info.GetMetadata()["field"]
		}
	}
	return a
}

func answerOfClaim(resp *dedupv1.ClaimResponse, err error) answer {
	if err != nil {
		return answerOfError(status.Convert(err))
	}
	return answer{outcome: resp.GetOutcome(), state: resp.GetRecord().GetState(),
		token: resp.GetFencingToken(), resultLength: len(resp.GetRecord().GetResult())}
}

func answerOfItem(res *dedupv1.ClaimBatchResult) answer {
	if e := res.GetError(); e != nil {
		return answerOfError(status.FromProto(e))
	}
	return answerOfClaim(res.GetClaim(), nil)
}

// batchField is the field a lone call's INVALID_FIELD names, as the batch
// names it for item i.
func batchField(a answer, i int) answer {
	if a.field != "" {
		a.field = fmt.Sprintf("items[%d].%s", i, a.field)
	}
	return a
}

// Each item of a ClaimBatch answers exactly as a lone Claim of it does: the
// oracle is a second server, on a store of its own, given the same claims
// one at a time in the same order.
func TestClaimBatchAnswersAsLoneClaims(t *testing.T) {
	batch, lone := newClient(t), newClient(t)
	ctx := context.Background()
	for _, c := range []dedupv1.DedupServiceClient{batch, lone} {
		if _, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "orders", Key: "done", Digest: []byte("d")}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "orders", Key: "done", FencingToken: 1, Result: []byte("ok")}); err != nil {
			t.Fatal(err)
		}
	}
	items := []*dedupv1.ClaimBatchItem{
		{Key: "fresh", Digest: []byte("d")},
		{Key: "fresh", Digest: []byte("d")},      // a repeat: IN_PROGRESS behind the first
		{Key: "done", Digest: []byte("d")},       // the stored result
		{Key: "done", Digest: []byte("other")},   // DIGEST_MISMATCH
		{Key: ""},                                // INVALID_FIELD key
		{Key: "k", Digest: make([]byte, 65)},     // INVALID_FIELD digest
		{Key: "k", LeaseTtl: durationpb.New(-1)}, // INVALID_FIELD lease_ttl
		{Key: "k", LeaseTtl: durationpb.New(2 * time.Hour)},
		{Key: "bad\x00key"},
		{Key: "last", Owner: "w"},
	}
	resp, err := batch.ClaimBatch(ctx, &dedupv1.ClaimBatchRequest{Consumer: "orders", Items: items})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetResults()) != len(items) {
		t.Fatalf("%d results for %d items", len(resp.GetResults()), len(items))
	}
	for i, it := range items {
		want := batchField(answerOfClaim(lone.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "orders", Key: it.GetKey(),
			Digest: it.GetDigest(), LeaseTtl: it.GetLeaseTtl(), Owner: it.GetOwner()})), i)
		if got := answerOfItem(resp.GetResults()[i]); got != want {
			t.Errorf("item %d (%q): batch answered %+v, a lone Claim %+v", i, it.GetKey(), got, want)
		}
	}
	// A conflict carries the stored record, as for a lone call.
	if rec := storedRecord(t, resp.GetResults()[3].GetError()); rec.GetKey() != "done" || string(rec.GetResult()) != "ok" {
		t.Errorf("DIGEST_MISMATCH carries %v, want the stored record of done", rec)
	}
}

func storedRecord(t *testing.T, s *spb.Status) *dedupv1.Record {
	t.Helper()
	for _, d := range status.FromProto(s).Details() {
		if rec, ok := d.(*dedupv1.Record); ok {
			return rec
		}
	}
	t.Fatalf("status %v carries no record", s)
	return nil
}

// FinishBatch items answer as lone Completes and Rejects would.
func TestFinishBatchAnswersAsLoneCalls(t *testing.T) {
	batch, lone := newClient(t), newClient(t)
	ctx := context.Background()
	for _, c := range []dedupv1.DedupServiceClient{batch, lone} {
		for _, k := range []string{"a", "b", "c", "d"} {
			if _, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "orders", Key: k}); err != nil {
				t.Fatal(err)
			}
		}
	}
	items := []*dedupv1.FinishBatchItem{
		{Key: "a", FencingToken: 1, Outcome: &dedupv1.FinishBatchItem_Result{Result: []byte("r")}},
		{Key: "a", FencingToken: 1, Outcome: &dedupv1.FinishBatchItem_Result{Result: []byte("r")}},     // repeat
		{Key: "a", FencingToken: 1, Outcome: &dedupv1.FinishBatchItem_Result{Result: []byte("other")}}, // ALREADY_FINISHED
		{Key: "b", FencingToken: 2, Outcome: &dedupv1.FinishBatchItem_Result{Result: []byte("r")}},     // LEASE_LOST
		{Key: "c", FencingToken: 1, Outcome: &dedupv1.FinishBatchItem_Rejection{Rejection: &dedupv1.Rejection{Reason: "NO"}}},
		{Key: "d", FencingToken: 1, Outcome: &dedupv1.FinishBatchItem_Rejection{Rejection: &dedupv1.Rejection{Reason: "BUSY", Retryable: true}}},
		{Key: "none", FencingToken: 1, Outcome: &dedupv1.FinishBatchItem_Result{Result: []byte("r")}}, // LEASE_LOST
		{Key: "b", FencingToken: 0, Outcome: &dedupv1.FinishBatchItem_Result{Result: []byte("r")}},    // INVALID_FIELD
		{Key: "b", FencingToken: 1, Outcome: &dedupv1.FinishBatchItem_Result{Result: make([]byte, 2<<10)}},
		{Key: "b", FencingToken: 1, Outcome: &dedupv1.FinishBatchItem_Rejection{Rejection: &dedupv1.Rejection{Reason: strings.Repeat("x", 129)}}},
	}
	resp, err := batch.FinishBatch(ctx, &dedupv1.FinishBatchRequest{Consumer: "orders", Items: items})
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range items {
		var (
			rec  *dedupv1.Record
			err  error
			want answer
		)
		if r, ok := it.GetOutcome().(*dedupv1.FinishBatchItem_Result); ok {
			var resp *dedupv1.CompleteResponse
			resp, err = lone.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "orders", Key: it.GetKey(), FencingToken: it.GetFencingToken(), Result: r.Result})
			rec = resp.GetRecord()
		} else {
			rej := it.GetRejection()
			var resp *dedupv1.RejectResponse
			resp, err = lone.Reject(ctx, &dedupv1.RejectRequest{Consumer: "orders", Key: it.GetKey(), FencingToken: it.GetFencingToken(),
				Reason: rej.GetReason(), Message: rej.GetMessage(), Detail: rej.GetDetail(), Retryable: rej.GetRetryable()})
			rec = resp.GetRecord()
		}
		if err != nil {
			want = answerOfError(status.Convert(err))
			if want.field != "" {
				want.field = strings.Replace(fmt.Sprintf("items[%d].%s", i, want.field), ".reason", ".rejection.reason", 1)
			}
		} else {
			want = answer{state: rec.GetState(), token: rec.GetFencingToken(), resultLength: len(rec.GetResult())}
		}
		got := answerOfRecordResult(resp.GetResults()[i])
		if got != want {
			t.Errorf("item %d (%q): batch answered %+v, a lone call %+v", i, it.GetKey(), got, want)
		}
	}
}

func answerOfRecordResult(res *dedupv1.RecordResult) answer {
	if e := res.GetError(); e != nil {
		return answerOfError(status.FromProto(e))
	}
	rec := res.GetRecord()
	return answer{state: rec.GetState(), token: rec.GetFencingToken(), resultLength: len(rec.GetResult())}
}

// The whole call is refused only for what concerns it whole.
func TestBatchRefusedWhole(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	tooMany := make([]*dedupv1.ClaimBatchItem, DefaultMaxBatchItems+1)
	for i := range tooMany {
		tooMany[i] = &dedupv1.ClaimBatchItem{Key: fmt.Sprint(i)}
	}
	_, err := c.ClaimBatch(ctx, &dedupv1.ClaimBatchRequest{Consumer: "orders", Items: tooMany})
	wantStatus(t, err, codes.InvalidArgument, rpcerrors.ReasonInvalidField, "items")
	_, err = c.ClaimBatch(ctx, &dedupv1.ClaimBatchRequest{Consumer: "Not Valid", Items: tooMany[:1]})
	wantStatus(t, err, codes.InvalidArgument, rpcerrors.ReasonInvalidField, "consumer")
	_, err = c.LookupBatch(ctx, &dedupv1.LookupBatchRequest{Consumer: "orders", Keys: make([]string, DefaultMaxBatchItems+1)})
	wantStatus(t, err, codes.InvalidArgument, rpcerrors.ReasonInvalidField, "keys")
	// Nothing of the refused batch was stored.
	_, err = c.Lookup(ctx, &dedupv1.LookupRequest{Consumer: "orders", Key: "0"})
	wantStatus(t, err, codes.NotFound, rpcerrors.ReasonNotFound, "")
	// An empty batch is a batch.
	resp, err := c.ClaimBatch(ctx, &dedupv1.ClaimBatchRequest{Consumer: "orders"})
	if err != nil || len(resp.GetResults()) != 0 {
		t.Errorf("empty batch: %v, %v", resp, err)
	}
}

func TestLookupBatchPerKey(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	if _, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "orders", Key: "held"}); err != nil {
		t.Fatal(err)
	}
	resp, err := c.LookupBatch(ctx, &dedupv1.LookupBatchRequest{Consumer: "orders", Keys: []string{"none", "held", ""}})
	if err != nil {
		t.Fatal(err)
	}
	want := []answer{
		{code: codes.NotFound, reason: rpcerrors.ReasonNotFound},
		{state: dedupv1.State_STATE_PENDING, token: 1},
		{code: codes.InvalidArgument, reason: rpcerrors.ReasonInvalidField, field: "keys[2]"},
	}
	for i, w := range want {
		if got := answerOfRecordResult(resp.GetResults()[i]); got != w {
			t.Errorf("key %d: %+v, want %+v", i, got, w)
		}
	}
}

// fixedTokens is an ItemLimiter with a fixed number of tokens left.
type fixedTokens struct{ left int }

func (f *fixedTokens) TakeUpTo(_ string, n int) (int, time.Duration) {
	taken := min(n, f.left)
	f.left -= taken
	if taken < n {
		return taken, 3 * time.Second
	}
	return taken, 0
}

// A batch larger than the tokens left gets its first items through and
// the rest RATE_LIMITED, each with a retry delay, nothing of them stored.
func TestBatchItemsBeyondTheRateAreRateLimited(t *testing.T) {
	st, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc := NewDedupServiceWith(st, policy.NewKeys(st, testDefaults, 0), slog.New(slog.DiscardHandler),
		ServiceOptions{Items: &fixedTokens{left: 2}})
	ctx := context.Background()
	resp, err := svc.ClaimBatch(ctx, &dedupv1.ClaimBatchRequest{Consumer: "orders", Items: []*dedupv1.ClaimBatchItem{
		{Key: "a"}, {Key: "b"}, {Key: "c"}, {Key: "d"}}})
	if err != nil {
		t.Fatal(err)
	}
	for i, res := range resp.GetResults() {
		if i < 2 {
			if res.GetClaim().GetOutcome() != dedupv1.Outcome_OUTCOME_ACQUIRED {
				t.Errorf("item %d: %v, want ACQUIRED", i, res)
			}
			continue
		}
		st := status.FromProto(res.GetError())
		if a := answerOfError(st); a.code != codes.ResourceExhausted || a.reason != rpcerrors.ReasonRateLimited {
			t.Errorf("item %d: %+v, want RESOURCE_EXHAUSTED RATE_LIMITED", i, a)
		}
		delay := time.Duration(0)
		for _, d := range st.Details() {
			if ri, ok := d.(*errdetails.RetryInfo); ok {
				delay = ri.GetRetryDelay().AsDuration()
			}
		}
		if delay != 3*time.Second {
			t.Errorf("item %d: retry delay %v, want the limiter's 3s", i, delay)
		}
		if _, err := st2Lookup(svc, "orders", []string{"c", "d"}[i-2]); status.Code(err) != codes.NotFound {
			t.Errorf("rate limited item %d was stored: %v", i, err)
		}
	}
}

func st2Lookup(svc *DedupService, consumer, key string) (*dedupv1.LookupResponse, error) {
	return svc.Lookup(context.Background(), &dedupv1.LookupRequest{Consumer: consumer, Key: key})
}
