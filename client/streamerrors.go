package client

import (
	"errors"
	"fmt"
	"strconv"
)

// The stream refusals, matched with errors.Is.
var (
	// ErrSequenceGap: a dense stream was claimed past the sequence it
	// expects next (reason SEQUENCE_GAP). errors.As to *GapError, or read
	// Error.Metadata["expected_sequence"], for the expected sequence.
	ErrSequenceGap = errors.New("dedup: sequence gap")
	// ErrStreamModeMismatch: the claim named another mode than the
	// stream's, or than its consumer's policy fixes (STREAM_MODE_MISMATCH).
	ErrStreamModeMismatch = errors.New("dedup: stream mode mismatch")
	// ErrStreamNotFound: the stream has no live record (STREAM_NOT_FOUND).
	ErrStreamNotFound = errors.New("dedup: no such stream")
	// ErrParkFull: a claim with Park found the stream at its max_parked,
	// or the consumer at its parked byte budget (PARK_FULL); nothing was
	// stored: let the message be redelivered.
	ErrParkFull = errors.New("dedup: no room to park the event")
	// ErrParkUnsupported: a claim with Park was answered SEQUENCE_GAP, so
	// the server does not know park mode (it ignored the field). The error
	// wraps the *GapError.
	ErrParkUnsupported = errors.New("dedup: the server does not support park mode (it answered a claim with park with SEQUENCE_GAP)")
)

// GapError is a claim of a sequence past the one its dense stream expects:
// hold the event back until Expected has been processed, or let the
// transport redeliver it later.
type GapError struct {
	Stream   string
	Sequence int64
	// Expected is the sequence the stream accepts next.
	Expected int64
	// Cause is the server's refusal.
	Cause *Error
}

func (e *GapError) Error() string {
	return fmt.Sprintf("dedup: stream %q: sequence %d arrived before %d", e.Stream, e.Sequence, e.Expected)
}

func (e *GapError) Is(target error) bool { return target == ErrSequenceGap }
func (e *GapError) Unwrap() error        { return e.Cause }

// asGapError turns a SEQUENCE_GAP refusal into a *GapError; other errors
// pass through.
func asGapError(err error, stream string, seq int64) error {
	var e *Error
	if !errors.As(err, &e) || e.Reason != "SEQUENCE_GAP" {
		return err
	}
	expected, convErr := strconv.ParseInt(e.Metadata["expected_sequence"], 10, 64)
	if convErr != nil {
		return err
	}
	return &GapError{Stream: stream, Sequence: seq, Expected: expected, Cause: e}
}
