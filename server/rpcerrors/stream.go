package rpcerrors

import (
	"errors"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dedupd/dedupd/internal/clip"
	"github.com/dedupd/dedupd/server/recordpb"
	"github.com/dedupd/dedupd/server/store"
)

// ErrStreamNotFound: the stream has no live record. Handlers return it in
// place of store.ErrNotFound, which means a missing key.
var ErrStreamNotFound = errors.New("no live stream")

// MetaExpectedSequence is the ErrorInfo metadata key of a SEQUENCE_GAP: the
// sequence the stream expects next.
const MetaExpectedSequence = "expected_sequence"

// MaxEchoed bounds a caller's value (a stream id, say) that an error's
// metadata or a log line echoes.
const MaxEchoed = 128

// streamConflictStatus is the status of a refusal caused by a stored
// stream: the stream rides along as a detail, and its id, mark and mode
// (and, for a gap, the expected sequence) in the metadata.
func streamConflictStatus(err error, c *store.StreamConflictError, code codes.Code, reason string, meta map[string]string) *status.Status {
	meta["stream"] = Capped(c.Stream.Stream)
	meta["high_water"] = strconv.FormatInt(c.Stream.HighWater, 10)
	meta["mode"] = string(c.Stream.Mode)
	meta["fencing_token"] = strconv.FormatInt(c.Stream.FencingToken, 10)
	if errors.Is(err, store.ErrSequenceGap) {
		meta[MetaExpectedSequence] = strconv.FormatInt(c.Expected, 10)
	}
	return withDetails(code, err.Error(), reason, meta, recordpb.StreamFromStore(c.Stream))
}

// Capped is s cut to MaxEchoed bytes (at a character boundary), marked
// with "…" when cut: internal/clip's rule, which every echo follows.
func Capped(s string) string { return clip.String(s, MaxEchoed) }
