package replybudget

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/dedupd/dedupd/server/claimwait"
	"github.com/dedupd/dedupd/server/rpcerrors"
)

// Floor is the least every call takes from the budget before its handler
// runs, and keeps for its reply: most replies are no larger, so most calls
// are refused, when there is no room, before they change anything.
const Floor = 64 << 10

// Plan is what one method's calls take from the budget.
type Plan struct {
	// UpFront is reserved before the handler runs (Floor when less): where
	// there is no room for it, the call is refused before it changes
	// anything.
	UpFront int64
	// Reserve, when set, is the size of the reply the request may build,
	// reserved up front like UpFront (the larger of the two), so that a
	// large reply is counted before it is built rather than after.
	Reserve func(req any) int64
	// ReadOnly marks calls that change nothing: a reply larger than UpFront
	// may still be refused once it is built. Any other call may have
	// written by then, and a failed call must change nothing, so its reply
	// is never refused after its handler ran: what it takes past UpFront
	// goes over the budget (docs/operations.md states that bound).
	ReadOnly bool
	// Unchanged, when set, tells from a reply that its call changed
	// nothing after all (a Claim that answered with the stored outcome),
	// so that the reply may be refused as a read's may.
	Unchanged func(reply any) bool
}

// Planner gives the plan of a method (its full gRPC name).
type Planner func(fullMethod string) Plan

// UnaryServerInterceptor makes every reply take its bytes from b before it
// is encoded: the plan's UpFront before the handler runs, the rest after.
// A call that finds no room within MaxWait fails RESOURCE_EXHAUSTED,
// reason OVERLOADED. Install it after the in-flight bound, so that a call
// waits for room inside its in-flight slot, and with StatsHandler on the
// server.
func (b *Budget) UnaryServerInterceptor(plan Planner) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		p := plan(info.FullMethod)
		upFront := max(p.UpFront, Floor)
		if p.Reserve != nil {
			upFront = max(upFront, p.Reserve(req))
		}
		conn := connOf(ctx)
		r, err := b.take(ctx, upFront, conn)
		if err != nil {
			return nil, rpcerrors.Status(err, "", "").Err()
		}
		var resp any
		if claimwait.Asks(req) {
			held := &heldReply{b: b, r: r, n: upFront}
			resp, err = handler(claimwait.WithAdmission(ctx, held), req)
			held.restore()
		} else {
			resp, err = handler(ctx, req)
		}
		m, ok := resp.(proto.Message)
		if err != nil || !ok {
			r.release()
			return resp, err
		}
		r.size = proto.Size(m)
		switch n := int64(max(r.size, minCharge)); {
		case n <= upFront:
			b.shrink(r, upFront-n)
		case !p.ReadOnly && (p.Unchanged == nil || !p.Unchanged(resp)):
			b.force(r, n-upFront)
		default:
			if err := b.hold(ctx, r, n-upFront); err != nil {
				r.release()
				return nil, rpcerrors.Status(err, "", "").Err()
			}
		}
		if _, taken := pending.LoadOrStore(resp, r); taken {
			// The same message answers two calls at once (a shared
			// constant reply): one reservation covers it.
			r.release()
			return resp, nil
		}
		r.key = resp
		if conn != nil {
			conn.add(r)
		}
		return resp, nil
	}
}

// heldReply is a call's up-front reservation as a claimwait.Admission: a
// claim waiting for an in-flight outcome gives its bytes back while it
// sleeps, so that waiting calls take none of the budget. Only the call's
// own goroutine uses it.
type heldReply struct {
	b        *Budget
	r        *reservation
	n        int64 // what the reservation holds while taken
	released bool
}

func (h *heldReply) Release() {
	if !h.released {
		h.released = true
		h.b.shrink(h.r, h.n)
	}
}

// Resume takes the bytes back if they fit now, without waiting.
func (h *heldReply) Resume() bool {
	if h.released && h.b.tryGrow(h.r, h.n) {
		h.released = false
	}
	return !h.released
}

// restore takes the bytes back, over the budget if need be, once the
// handler has returned: the reply's accounting below starts from a full
// reservation (a wait that ended without room is answered, not refused).
func (h *heldReply) restore() {
	if h.released {
		h.released = false
		h.b.force(h.r, h.n)
	}
}
