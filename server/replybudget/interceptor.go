package replybudget

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/dedupd/dedupd/server/rpcerrors"
)

// Floor is what every call takes from the budget before its handler runs,
// and keeps for its reply: a call whose reply is no larger (every call
// that changes one key: Claim, Complete, the stream calls...) is refused,
// when there is no room, before it changes anything. A larger reply (a
// replay of a large record, a page, a batch) takes the rest once it is
// built, and it is then that it may be refused.
const Floor = 64 << 10

// UnaryServerInterceptor makes every reply take its bytes from b before it
// is encoded: Floor before the handler runs, the rest after. A call that
// finds no room within MaxWait fails RESOURCE_EXHAUSTED, reason
// OVERLOADED. Install it after the in-flight bound, so that a call waits
// for room inside its in-flight slot, and with StatsHandler on the server.
func (b *Budget) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		conn := connOf(ctx)
		r, err := b.take(ctx, Floor, conn)
		if err != nil {
			return nil, rpcerrors.Status(err, "", "").Err()
		}
		resp, err := handler(ctx, req)
		m, ok := resp.(proto.Message)
		if err != nil || !ok {
			r.release()
			return resp, err
		}
		if n := int64(max(proto.Size(m), minCharge)); n <= Floor {
			b.shrink(r, Floor-n)
		} else if err := b.grow(ctx, r, n-Floor); err != nil {
			r.release()
			return nil, rpcerrors.Status(err, "", "").Err()
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
