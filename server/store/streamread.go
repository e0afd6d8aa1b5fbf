package store

import (
	"context"
	"time"
)

// ReadStreamParams are the inputs of Reader.ReadStream: the stream to
// read, and whether the summary of its parked events is wanted too.
type ReadStreamParams struct {
	Consumer, Stream string
	// Parked asks for the stream's ParkedSummary beside the stream.
	Parked bool
}

// Op is the operation a ReadStream is observed as: GetStream for the
// stream alone, GetParkedSummary when the summary was asked, the names
// the typed calls had as engine methods, which spans and metric labels
// keep.
func (p ReadStreamParams) Op() Op {
	if p.Parked {
		return OpGetParkedSummary
	}
	return OpGetStream
}

// StreamRead is what ReadStream found: a live stream and, when Parked was
// asked, the summary of its parked events (zero otherwise).
type StreamRead struct {
	Stream Stream
	Parked ParkedSummary
}

// ParkedSpan is what a store's aggregate read of one stream's parked
// events finds: the lowest and highest sequence and the oldest parking
// time, zeros when none is parked.
type ParkedSpan struct {
	Lowest, Highest int64
	Oldest          time.Time
}

// LiveStream is a stored stream as a read answers it: ErrNotFound when
// there is none (st nil) or it has expired at now.
func LiveStream(st *Stream, now time.Time) (Stream, error) {
	if !IsStreamLive(st, now) {
		return Stream{}, ErrNotFound
	}
	return *st, nil
}

// ReadStreamOf is ReadStream for a backend: get reads the live stream
// (ErrNotFound when it is absent or expired), and span, asked only when
// p.Parked and the stream holds parked events, reads their span; the
// summary is ParkedSummaryOf the two.
func ReadStreamOf(ctx context.Context, p ReadStreamParams,
	get func(ctx context.Context, consumer, stream string) (Stream, error),
	span func(ctx context.Context, consumer, stream string) (ParkedSpan, error)) (StreamRead, error) {
	st, err := get(ctx, p.Consumer, p.Stream)
	if err != nil {
		return StreamRead{}, err
	}
	if !p.Parked {
		return StreamRead{Stream: st}, nil
	}
	var s ParkedSpan
	if st.Parked > 0 {
		if s, err = span(ctx, p.Consumer, p.Stream); err != nil {
			return StreamRead{}, err
		}
	}
	return StreamRead{Stream: st, Parked: ParkedSummaryOf(st, s.Lowest, s.Highest, s.Oldest)}, nil
}
