package api

import (
	"context"
	"errors"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/recordpb"
	"github.com/dedupd/dedupd/server/store"
)

// MaxReplyBytes is the most a reply may take, a batch or a page: grpc-go's
// default client receive limit, so that a client left at its defaults can
// read every reply.
const MaxReplyBytes = 4 << 20

// replyLimit is what the results of a batch reply may take: MaxReplyBytes
// less room for the reply's own framing.
const replyLimit = MaxReplyBytes - 1<<10

// The reply size rule of a batch. Results are first built whole. When they
// would not fit in replyLimit, every result is also built without its
// payload (the record's result, rejection message and rejection detail,
// whether in the answer or in an error's stored record), and results are
// taken whole in request order for as long as what they add over their
// lean form still fits beside the lean form of all the others; the rest go
// lean, marked result_omitted, to be read with Lookup. MaxBatchItemsCeiling
// keeps the lean form of a whole batch within the limit.

// storeChunk is how many items of a batch go to the store at once. The
// store reads each item's whole record, stored result included, so the
// chunk bounds what a batch holds in memory beyond what its reply keeps:
// payloads past MaxReplyBytes are dropped as each chunk's answers arrive.
const storeChunk = 100

// payloadBudget keeps the payloads of a batch's answers, in order, while
// they total at most MaxReplyBytes, and drops the rest as they arrive:
// leaned would leave them out of the reply anyway.
type payloadBudget struct{ kept int }

func (b *payloadBudget) keep(it *batchItem) {
	rec, conflict := &it.res.Record, (*store.ConflictError)(nil)
	if errors.As(it.res.Err, &conflict) {
		rec = &conflict.Record
	}
	n := payloadSize(*rec)
	if n == 0 {
		return
	}
	if b.kept+n <= MaxReplyBytes {
		b.kept += n
		return
	}
	*rec = withoutPayload(*rec)
	it.omitted = true
}

func payloadSize(r store.Record) int {
	n := len(r.Result)
	if r.Rejection != nil {
		n += len(r.Rejection.Message) + len(r.Rejection.Detail)
	}
	return n
}

// leaned builds the results of a batch of n items, whole or lean, within
// the reply limit: build(i, lean) is the result of item i.
func leaned[R proto.Message](n int, build func(i int, lean bool) R) []R {
	whole := make([]R, n)
	sizes := make([]int, n)
	total := 0
	for i := range whole {
		whole[i] = build(i, false)
		sizes[i] = entrySize(whole[i])
		total += sizes[i]
	}
	if total <= replyLimit {
		return whole
	}
	lean := make([]R, n)
	leanTotal := 0
	for i := range lean {
		lean[i] = build(i, true)
		leanTotal += entrySize(lean[i])
	}
	room := replyLimit - leanTotal
	for i := range whole {
		extra := sizes[i] - entrySize(lean[i])
		if extra > room {
			whole[i] = lean[i]
			continue
		}
		room -= extra
	}
	return whole
}

// entrySize is what a result takes in its reply: the message, its length
// and the field tag.
func entrySize(m proto.Message) int {
	n := proto.Size(m)
	return n + 1 + varintSize(n)
}

func varintSize(n int) int {
	size := 1
	for ; n >= 0x80; n >>= 7 {
		size++
	}
	return size
}

// MaxRefusalPayloadBytes is the most a unary refusal's record carries of
// what its caller stored (result, rejection message and detail); a record
// with more goes without all three. The record rides in the
// grpc-status-details-bin trailer, base64-encoded, beside the status message
// and ErrorInfo, and gRPC's C core (the Python client) refuses trailers over
// 8 KiB by default: with every other field at its limit, 1 KiB of payload
// keeps the trailer near 6 KiB, while the small results most callers store
// still come back whole with the conflict.
const MaxRefusalPayloadBytes = 1 << 10

// payloadBytes is how much of r its caller stored.
func payloadBytes(r store.Record) int {
	n := len(r.Result)
	if r.Rejection != nil {
		n += len(r.Rejection.Message) + len(r.Rejection.Detail)
	}
	return n
}

// withoutPayload returns the record without what its caller stored: the
// result, the rejection message and the rejection detail.
func withoutPayload(r store.Record) store.Record {
	r.Result = nil
	if r.Rejection != nil {
		rej := *r.Rejection
		rej.Message, rej.Detail = "", nil
		r.Rejection = &rej
	}
	return r
}

// itemError is an item's error as its lone call would have failed, lean
// or whole, through the same answer and log line as a lone call. Internal
// errors are logged for the first item of a batch only, so that one failing
// batch cannot flood the log; a store outage's lines are rate-limited
// across all calls anyway.
func (s *DedupService) itemError(ctx context.Context, err error, consumer, key string, lean bool, logged *bool) *spb.Status {
	var conflict *store.ConflictError
	if lean && errors.As(err, &conflict) {
		err = &store.ConflictError{Err: conflict.Err, Record: withoutPayload(conflict.Record)}
	}
	t := keyCall(consumer, key)
	st := callStatus(err, t)
	if st.Code() != codes.Internal || !*logged {
		*logged = *logged || st.Code() == codes.Internal
		logCause(ctx, s.log, st.Code(), err, t)
	}
	return st.Proto()
}

func (s *DedupService) claimResults(ctx context.Context, consumer string, items []batchItem) []*dedupv1.ClaimBatchResult {
	logged := false
	return leaned(len(items), func(i int, lean bool) *dedupv1.ClaimBatchResult {
		it := items[i]
		if it.res.Err != nil {
			return &dedupv1.ClaimBatchResult{ResultOmitted: it.omitted || lean && errorHasPayload(it.res.Err),
				Result: &dedupv1.ClaimBatchResult_Error{Error: s.itemError(ctx, it.res.Err, consumer, it.key, lean, &logged)}}
		}
		res := store.ClaimResult{Outcome: it.res.Outcome, Record: it.res.Record, RetryAfter: it.res.RetryAfter}
		if lean {
			res.Record = withoutPayload(res.Record)
		}
		return &dedupv1.ClaimBatchResult{ResultOmitted: it.omitted || lean && hasPayload(it.res.Record),
			Result: &dedupv1.ClaimBatchResult_Claim{Claim: claimResponse(res)}}
	})
}

func (s *DedupService) recordResults(ctx context.Context, consumer string, items []batchItem) []*dedupv1.RecordResult {
	logged := false
	return leaned(len(items), func(i int, lean bool) *dedupv1.RecordResult {
		it := items[i]
		if it.res.Err != nil {
			return &dedupv1.RecordResult{ResultOmitted: it.omitted || lean && errorHasPayload(it.res.Err),
				Result: &dedupv1.RecordResult_Error{Error: s.itemError(ctx, it.res.Err, consumer, it.key, lean, &logged)}}
		}
		rec, rec0 := it.res.Record, it.res.Record
		if lean {
			rec = withoutPayload(rec)
		}
		return &dedupv1.RecordResult{ResultOmitted: it.omitted || lean && hasPayload(rec0), Result: &dedupv1.RecordResult_Record{Record: recordpb.FromStore(rec)}}
	})
}

// hasPayload reports whether a record holds anything a lean result leaves
// out.
func hasPayload(r store.Record) bool {
	return len(r.Result) > 0 || r.Rejection != nil && (r.Rejection.Message != "" || len(r.Rejection.Detail) > 0)
}

// errorHasPayload reports whether an item's error carries a stored record
// with a payload.
func errorHasPayload(err error) bool {
	var conflict *store.ConflictError
	return errors.As(err, &conflict) && hasPayload(conflict.Record)
}
