package server

import (
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/api"
	"github.com/dedupd/dedupd/server/replybudget"
	"github.com/dedupd/dedupd/server/rpcmethod"
)

// replyPlan is what each method takes from the reply budget
// (server/replybudget.Plan), decided from the method table
// (server/rpcmethod), never from a method's name:
//   - the batch writes (ClaimBatch, FinishBatch, ExtendLeaseBatch) reserve
//     the largest batch reply before they run, so that a full budget
//     refuses them before they claim or finish anything;
//   - the calls that only read (NO_SIDE_EFFECTS in the protos: Lookup,
//     ListRecords, Stats, ...) may be refused once their reply is built,
//     since they changed nothing; those that may build a large reply
//     reserve it before they run (readReservation), so that it is counted
//     before it exists;
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
	return replyPlans[fullMethod]
}

// replyPlans holds the plan of every method of the table; a method outside
// it (health, reflection) gets the zero plan, a write's.
var replyPlans = func() map[string]replybudget.Plan {
	plans := map[string]replybudget.Plan{}
	for _, m := range rpcmethod.All() {
		plans[m.FullName] = planOf(m)
	}
	return plans
}()

// claimReply is the reply of a lone Claim, which may say it wrote nothing.
var claimReply = (&dedupv1.ClaimResponse{}).ProtoReflect().Descriptor()

// planOf decides one method's plan from its facts.
func planOf(m *rpcmethod.Method) replybudget.Plan {
	switch {
	case m.ReadOnly:
		return replybudget.Plan{ReadOnly: true, Reserve: readReservation}
	case m.Batch():
		return replybudget.Plan{UpFront: api.MaxReplyBytes}
	case m.Desc != nil && m.Desc.Output() == claimReply:
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
