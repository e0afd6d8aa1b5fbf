package store

import (
	"strings"
	"unicode"
)

// Op is one store operation, named once. Its Name is the span name
// ("store."+Name) and, in snake case (Label), the op label of the store
// metrics and the name pgstore's retries count under, so the three
// spellings cannot drift apart. Traced and Counted say what the observing
// decorator does with a call of it.
type Op struct {
	// Name is the operation as the typed API calls it ("ClaimStream").
	Name string
	// Label is Name in snake case ("claim_stream").
	Label string
	// Traced: each call is a span named "store."+Name.
	Traced bool
	// Counted: each call's failures count in the store metrics under
	// Label, and its outcome reaches the health watcher.
	Counted bool
}

const (
	traced  = 1 << iota // span of each call
	counted             // failures counted under the label
)

func newOp(name string, how int) Op {
	return Op{Name: name, Label: snake(name), Traced: how&traced != 0, Counted: how&counted != 0}
}

// snake spells a Go name in snake case: "ExtendStreamLease" becomes
// "extend_stream_lease".
func snake(name string) string {
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// The operations. The reaper's deletes and the health pings are counted
// but not traced (they run on timers, with no caller's trace to join);
// operators' purges, counts and stats and the policy calls are neither
// (the gRPC metrics and spans of their calls show them).
var (
	OpClaim        = newOp("Claim", traced|counted)
	OpComplete     = newOp("Complete", traced|counted)
	OpReject       = newOp("Reject", traced|counted)
	OpExtendLease  = newOp("ExtendLease", traced|counted)
	OpDeleteRecord = newOp("DeleteRecord", traced)
	OpApplyBatch   = newOp("ApplyBatch", traced)
	OpLookup       = newOp("Lookup", traced|counted)
	OpLookupBatch  = newOp("LookupBatch", traced)
	OpListRecords  = newOp("ListRecords", traced)

	OpClaimStream       = newOp("ClaimStream", traced|counted)
	OpCompleteStream    = newOp("CompleteStream", traced|counted)
	OpRejectStream      = newOp("RejectStream", traced|counted)
	OpReleaseStream     = newOp("ReleaseStream", traced|counted)
	OpExtendStreamLease = newOp("ExtendStreamLease", traced|counted)
	OpResetStream       = newOp("ResetStream", traced)
	OpGetStream         = newOp("GetStream", traced|counted)
	OpListStreams       = newOp("ListStreams", traced)

	OpClaimParked      = newOp("ClaimParked", traced|counted)
	OpDropParked       = newOp("DropParked", traced|counted)
	OpSkipGap          = newOp("SkipGap", traced|counted)
	OpListParked       = newOp("ListParked", traced|counted)
	OpGetParkedSummary = newOp("GetParkedSummary", traced|counted)
	OpListOpenGaps     = newOp("ListOpenGaps", traced|counted)
	OpParkedTotals     = newOp("ParkedTotals", traced|counted)

	OpDeleteExpired        = newOp("DeleteExpired", counted)
	OpDeleteExpiredStreams = newOp("DeleteExpiredStreams", counted)
	OpPing                 = newOp("Ping", counted)
)

// Ops returns every operation, in a fixed order.
func Ops() []Op {
	return []Op{
		OpClaim, OpComplete, OpReject, OpExtendLease, OpDeleteRecord, OpApplyBatch, OpLookup, OpLookupBatch,
		OpListRecords, OpClaimStream, OpCompleteStream, OpRejectStream, OpReleaseStream, OpExtendStreamLease,
		OpResetStream, OpGetStream, OpListStreams, OpClaimParked, OpDropParked, OpSkipGap, OpListParked,
		OpGetParkedSummary, OpListOpenGaps, OpParkedTotals, OpDeleteExpired, OpDeleteExpiredStreams, OpPing,
	}
}

// Commands returns a zero value of every key command and StreamCommands of
// every stream command: a decorator's test runs its decision over each,
// so that a command added here fails that test until it is decided.
func Commands() []Command {
	return []Command{ClaimParams{}, CompleteParams{}, RejectParams{}, ExtendLeaseParams{}, DeleteRecordParams{}}
}

// StreamCommands returns a zero value of every stream command; see Commands.
func StreamCommands() []StreamCommand {
	return []StreamCommand{ClaimStreamParams{}, CompleteStreamParams{}, RejectStreamParams{}, ReleaseStreamParams{},
		ExtendStreamLeaseParams{}, ResetStreamParams{}, ClaimParkedParams{}, DropParkedParams{}, SkipGapParams{}}
}
