package replybudget

import (
	"sync"

	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// pending holds the reservation of each reply that the interceptor has let
// through and grpc-go has not yet encoded, keyed by the reply itself.
var pending sync.Map // any (the reply) → *reservation

// budgetCodec is grpc-go's proto codec, except that a reply with a
// reservation is encoded into a buffer whose return to the pool gives the
// reservation back: grpc-go returns it once the transport has written the
// bytes or dropped them with their stream. It wraps whatever codec is
// registered as "proto" (server/api's decoding one changes only Unmarshal,
// so the two compose in either order), and behaves exactly as that codec
// for every message without a reservation: clients in the process, and
// requests, see no difference.
type budgetCodec struct{ encoding.CodecV2 }

func init() {
	encoding.RegisterCodecV2(budgetCodec{encoding.GetCodecV2(protocodec.Name)})
}

func (c budgetCodec) Marshal(v any) (mem.BufferSlice, error) {
	held, ok := pending.LoadAndDelete(v)
	if !ok {
		return c.CodecV2.Marshal(v)
	}
	r := held.(*reservation)
	m, ok := v.(proto.Message)
	if !ok { // the interceptor reserves only for proto messages
		r.release()
		return c.CodecV2.Marshal(v)
	}
	pool := mem.DefaultBufferPool()
	// The interceptor sized this very message, which left its size in the
	// size cache of every message in it, and nothing changes a reply once
	// its handler has returned it: so the size is not computed again (a
	// tenth of a 100-key ClaimBatch's CPU in dedupd was the two sizings),
	// and Marshal reads the caches (UseCachedSize).
	size := r.size
	// At least minCharge, so that mem.NewBuffer counts references and the
	// buffer comes back through Put however small the reply.
	buf := pool.Get(max(size, minCharge))
	wire, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend((*buf)[:0], m)
	if err != nil {
		pool.Put(buf)
		r.release()
		return nil, err
	}
	*buf = wire
	return mem.BufferSlice{mem.NewBuffer(buf, releasingPool{BufferPool: pool, r: r})}, nil
}

// releasingPool takes back one reply's buffer: to the pool it came from,
// and its bytes to the budget.
type releasingPool struct {
	mem.BufferPool
	r *reservation
}

func (p releasingPool) Put(buf *[]byte) {
	p.BufferPool.Put(buf)
	p.r.releaseWritten()
}
