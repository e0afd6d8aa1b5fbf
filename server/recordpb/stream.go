package recordpb

import (
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/store"
)

var streamModeToProto = map[store.StreamMode]dedupv1.StreamMode{
	store.Dense:    dedupv1.StreamMode_STREAM_MODE_DENSE,
	store.Versions: dedupv1.StreamMode_STREAM_MODE_VERSIONS,
}

// StreamModeToProto converts a stream mode; empty is unspecified.
func StreamModeToProto(m store.StreamMode) dedupv1.StreamMode { return streamModeToProto[m] }

// StreamFromStore converts a stored stream to its API form.
func StreamFromStore(st store.Stream) *dedupv1.Stream {
	ps := &dedupv1.Stream{
		Consumer: st.Consumer, Stream: st.Stream, Mode: streamModeToProto[st.Mode],
		HighWater: st.HighWater, LastOutcome: stateToProto[st.LastOutcome], Rejected: st.Rejected,
		InFlight: st.InFlight, Digest: st.Digest, FencingToken: st.FencingToken, Owner: st.Owner,
		LeaseExpiresAt: Timestamp(st.LeaseExpiresAt), CreatedAt: Timestamp(st.CreatedAt),
		UpdatedAt: Timestamp(st.UpdatedAt), ExpiresAt: Timestamp(st.ExpiresAt),
		Parked: st.Parked, ParkedBytes: st.ParkedBytes, Skipped: st.Skipped,
		LastSkipped: SkippedRangeFromStore(st.LastSkipped),
	}
	if rj := st.LastRejection; rj != nil {
		ps.LastRejection = &dedupv1.Rejection{Reason: rj.Reason, Message: rj.Message, Detail: rj.Detail}
	}
	return ps
}
