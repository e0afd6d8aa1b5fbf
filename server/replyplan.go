package server

import (
	"strings"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/api"
	"github.com/dedupd/dedupd/server/replybudget"
)

// replyPlan is what each method takes from the reply budget
// (server/replybudget.Plan):
//   - the batch writes (ClaimBatch, FinishBatch, ExtendLeaseBatch) reserve
//     the largest batch reply before they run, so that a full budget
//     refuses them before they claim or finish anything;
//   - the calls that only read (Lookup*, List*, Get*, Stats) may be
//     refused once their reply is built, since they changed nothing; those
//     that may build a large reply reserve it before they run
//     (readReservation), so that it is counted before it exists;
//   - a Claim that answered with the stored outcome wrote nothing, and its
//     reply (a replay of a large result) may be refused as a read's;
//   - every other call may have written by the time its reply exists, so
//     it is never refused after its handler ran; its reply is Floor or
//     less except when it echoes a stored result or hands out a parked
//     event's payload (CompleteStream's and RejectStream's next,
//     ClaimParked; at most --max-park-payload-bytes), and whatever it
//     takes past Floor goes over the budget (docs/operations.md, Memory).
//     A hand-out must not be refused: it acquired the event.
//
// A claim that waits for an in-flight outcome (server/claimwait) gives
// its up-front bytes back while it sleeps and takes them again to claim;
// the plan above is about what its last claim answered, and holds as is.
func replyPlan(fullMethod string) replybudget.Plan {
	method := fullMethod[strings.LastIndexByte(fullMethod, '/')+1:]
	switch {
	case method == "ClaimBatch" || method == "FinishBatch" || method == "ExtendLeaseBatch":
		return replybudget.Plan{UpFront: api.MaxReplyBytes}
	case readOnlyMethod(method):
		return replybudget.Plan{ReadOnly: true, Reserve: readReservation}
	case method == "Claim":
		return replybudget.Plan{Unchanged: claimReplayed}
	}
	return replybudget.Plan{}
}

// readReservation is what a read reserves before it runs: a LookupBatch
// one default-sized record (Floor, the default --max-result-bytes) per key,
// a page of ListRecords, ListStreams or ListParked the largest reply, and
// any other read nothing beyond Floor. A reply larger than its reservation
// (records larger than the default) is counted once built.
func readReservation(req any) int64 {
	switch r := req.(type) {
	case *dedupv1.LookupBatchRequest:
		return min(int64(len(r.GetKeys()))*replybudget.Floor, api.MaxReplyBytes)
	case *dedupv1.ListRecordsRequest, *dedupv1.ListStreamsRequest, *dedupv1.ListParkedRequest:
		return api.MaxReplyBytes
	}
	return 0
}

// claimReplayed reports a Claim that acquired nothing: it answered with the
// stored outcome (the large replies of Claim) or IN_PROGRESS, and wrote
// nothing.
func claimReplayed(reply any) bool {
	c, ok := reply.(*dedupv1.ClaimResponse)
	return ok && c.GetOutcome() != dedupv1.Outcome_OUTCOME_ACQUIRED
}

// readOnlyMethod reports the dedup.v1 methods that change nothing stored.
func readOnlyMethod(method string) bool {
	for _, prefix := range []string{"Lookup", "List", "Get"} {
		if strings.HasPrefix(method, prefix) {
			return true
		}
	}
	return method == "Stats"
}
