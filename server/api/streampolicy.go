package api

import (
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/store"
)

var streamStartToProto = map[store.StreamStart]dedupv1.StreamStart{
	store.StartAtOne:        dedupv1.StreamStart_STREAM_START_ONE,
	store.StartAtFirstClaim: dedupv1.StreamStart_STREAM_START_FIRST_CLAIM,
}

// streamMode reads a mode; unspecified is empty (the stream's own).
func (v *validator) streamMode(field string, m dedupv1.StreamMode) store.StreamMode {
	switch m {
	case dedupv1.StreamMode_STREAM_MODE_UNSPECIFIED:
		return ""
	case dedupv1.StreamMode_STREAM_MODE_DENSE:
		return store.Dense
	case dedupv1.StreamMode_STREAM_MODE_VERSIONS:
		return store.Versions
	}
	v.fail(field, "holds %v, which is not a stream mode", m)
	return ""
}

func (v *validator) streamStart(field string, s dedupv1.StreamStart) store.StreamStart {
	switch s {
	case dedupv1.StreamStart_STREAM_START_UNSPECIFIED:
		return ""
	case dedupv1.StreamStart_STREAM_START_ONE:
		return store.StartAtOne
	case dedupv1.StreamStart_STREAM_START_FIRST_CLAIM:
		return store.StartAtFirstClaim
	}
	v.fail(field, "holds %v, which is not a start rule", s)
	return ""
}
