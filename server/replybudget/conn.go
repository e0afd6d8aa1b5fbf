package replybudget

import (
	"context"
	"sync"

	"google.golang.org/grpc/stats"
)

// connReplies are the reservations of one connection's replies not yet
// written. grpc-go does not free the buffers of replies still queued when
// a connection closes (it leaves them to the garbage collector), so the
// connection's end gives their bytes back.
type connReplies struct {
	held int64 // bytes of its replies in the budget; Budget.mu guards it

	mu      sync.Mutex
	replies map[*reservation]struct{}
	closed  bool
}

// add records r, or gives it back at once when the connection has ended.
func (c *connReplies) add(r *reservation) {
	c.mu.Lock()
	if !c.closed {
		c.replies[r] = struct{}{}
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	r.release()
}

func (c *connReplies) forget(r *reservation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.replies, r)
}

func (c *connReplies) end() {
	c.mu.Lock()
	c.closed = true
	held := make([]*reservation, 0, len(c.replies))
	for r := range c.replies {
		held = append(held, r)
	}
	c.mu.Unlock()
	for _, r := range held {
		r.release()
	}
}

type connKey struct{}

func connOf(ctx context.Context) *connReplies {
	c, _ := ctx.Value(connKey{}).(*connReplies)
	return c
}

// StatsHandler is the grpc.StatsHandler that gives back the bytes of a
// connection's unwritten replies when the connection ends. Install it on
// every server that uses the budget's interceptor.
func StatsHandler() stats.Handler { return connEnds{} }

type connEnds struct{}

func (connEnds) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return context.WithValue(ctx, connKey{}, &connReplies{replies: map[*reservation]struct{}{}})
}

func (connEnds) HandleConn(ctx context.Context, s stats.ConnStats) {
	if _, ok := s.(*stats.ConnEnd); ok {
		if c := connOf(ctx); c != nil {
			c.end()
		}
	}
}

func (connEnds) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (connEnds) HandleRPC(context.Context, stats.RPCStats)                       {}
