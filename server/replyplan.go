package server

import (
	"strings"

	"github.com/dedupd/dedupd/server/api"
	"github.com/dedupd/dedupd/server/replybudget"
)

// replyPlan is what each method takes from the reply budget
// (server/replybudget.Plan):
//   - the batch writes (ClaimBatch, FinishBatch, ExtendLeaseBatch) reserve
//     the largest batch reply before they run, so that a full budget
//     refuses them before they claim or finish anything;
//   - the calls that only read (Lookup*, List*, Get*, Stats) may be
//     refused once their reply is built, since they changed nothing;
//   - every other call may have written by the time its reply exists, so
//     it is never refused after its handler ran; its reply is Floor or
//     less except when it echoes a stored result, and whatever it takes
//     past Floor goes over the budget (docs/operations.md, Memory).
func replyPlan(fullMethod string) replybudget.Plan {
	method := fullMethod[strings.LastIndexByte(fullMethod, '/')+1:]
	switch {
	case method == "ClaimBatch" || method == "FinishBatch" || method == "ExtendLeaseBatch":
		return replybudget.Plan{UpFront: api.MaxReplyBytes}
	case readOnlyMethod(method):
		return replybudget.Plan{ReadOnly: true}
	}
	return replybudget.Plan{}
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
