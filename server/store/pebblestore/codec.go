package pebblestore

import (
	"encoding/binary"
	"errors"
	"math"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// Values are a version byte and then the fields in a fixed order: varints,
// and length-prefixed bytes. The version byte lets a later format add
// fields (decoders read what their version has); the store's format
// version (see format.go) says which value versions may be present.
const valueVersion = 1

// errCorrupt is what a value that does not decode becomes: the database
// holds something this code did not write.
var errCorrupt = errors.New("stored value does not decode")

type encoder []byte

func (e *encoder) int(v int64)  { *e = binary.AppendVarint(*e, v) }
func (e *encoder) str(s string) { *e = binary.AppendUvarint(*e, uint64(len(s))); *e = append(*e, s...) }
func (e *encoder) bytes(b []byte) {
	*e = binary.AppendUvarint(*e, uint64(len(b)))
	*e = append(*e, b...)
}
func (e *encoder) bool(b bool) {
	if b {
		e.int(1)
	} else {
		e.int(0)
	}
}
func (e *encoder) dur(d time.Duration) { e.int(int64(d)) }

// time stores microseconds; the zero time has a value of its own, so that
// it reads back as the zero time.
func (e *encoder) time(t time.Time) {
	if t.IsZero() {
		e.int(math.MinInt64)
		return
	}
	e.int(t.UnixMicro())
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) int() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes copies, as the value it reads from lives only until the read ends;
// an empty field reads as nil, as the stores' records hold it.
func (d *decoder) bytes() []byte {
	if d.err != nil {
		return nil
	}
	l, n := binary.Uvarint(d.b)
	if n <= 0 || uint64(len(d.b)-n) < l {
		d.err = errCorrupt
		return nil
	}
	v := d.b[n : n+int(l)]
	d.b = d.b[n+int(l):]
	if l == 0 {
		return nil
	}
	return append([]byte(nil), v...)
}

func (d *decoder) str() string        { return string(d.bytes()) }
func (d *decoder) bool() bool         { return d.int() != 0 }
func (d *decoder) dur() time.Duration { return time.Duration(d.int()) }

func (d *decoder) time() time.Time {
	us := d.int()
	if us == math.MinInt64 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

func newDecoder(b []byte) *decoder {
	if len(b) == 0 || b[0] != valueVersion {
		return &decoder{err: errCorrupt}
	}
	return &decoder{b: b[1:]}
}

func encodeRejection(e *encoder, r *store.Rejection) {
	e.bool(r != nil)
	if r != nil {
		e.str(r.Reason)
		e.str(r.Message)
		e.bytes(r.Detail)
		e.bool(r.Retryable)
	}
}

func decodeRejection(d *decoder) *store.Rejection {
	if !d.bool() {
		return nil
	}
	return &store.Rejection{Reason: d.str(), Message: d.str(), Detail: d.bytes(), Retryable: d.bool()}
}

func encodeRecord(r *store.Record) []byte {
	// Sized for the whole value up front: grown field by field from one
	// byte it took five allocations on every write of a record.
	e := make(encoder, 1, recordValueCap(r))
	e[0] = valueVersion
	e.str(string(r.State))
	e.bytes(r.Digest)
	e.int(r.FencingToken)
	e.int(r.Attempts)
	e.str(r.Owner)
	e.bytes(r.Result)
	encodeRejection(&e, r.Rejection)
	e.time(r.CreatedAt)
	e.time(r.UpdatedAt)
	e.time(r.LeaseExpiresAt)
	e.time(r.ExpiresAt)
	return e
}

// recordValueCap bounds the length of r's encoded value: its variable
// fields plus a varint's most (binary.MaxVarintLen64) for every number,
// length and time, of which a record has fewer than 20.
func recordValueCap(r *store.Record) int {
	n := 1 + len(r.State) + len(r.Digest) + len(r.Owner) + len(r.Result) + 20*binary.MaxVarintLen64
	if r.Rejection != nil {
		n += len(r.Rejection.Reason) + len(r.Rejection.Message) + len(r.Rejection.Detail)
	}
	return n
}

func decodeRecord(b []byte, consumer, key string) (*store.Record, error) {
	d := newDecoder(b)
	r := &store.Record{Consumer: consumer, Key: key}
	r.State = store.State(d.str())
	r.Digest = d.bytes()
	r.FencingToken = d.int()
	r.Attempts = d.int()
	r.Owner = d.str()
	r.Result = d.bytes()
	r.Rejection = decodeRejection(d)
	r.CreatedAt, r.UpdatedAt = d.time(), d.time()
	r.LeaseExpiresAt, r.ExpiresAt = d.time(), d.time()
	if d.err != nil {
		return nil, d.err
	}
	return r, nil
}

func encodeStream(s *store.Stream) []byte {
	e := encoder{valueVersion}
	e.str(string(s.Mode))
	e.int(s.HighWater)
	e.str(string(s.LastOutcome))
	encodeRejection(&e, s.LastRejection)
	e.int(s.FinishedToken)
	e.int(s.Rejected)
	e.int(s.InFlight)
	e.bytes(s.Digest)
	e.int(s.FencingToken)
	e.str(s.Owner)
	e.time(s.LeaseExpiresAt)
	e.time(s.CreatedAt)
	e.time(s.UpdatedAt)
	e.time(s.ExpiresAt)
	e.int(s.Parked)
	e.int(s.ParkedBytes)
	e.int(s.Skipped)
	e.bool(s.LastSkipped != nil)
	if r := s.LastSkipped; r != nil {
		e.int(r.From)
		e.int(r.To)
		e.str(string(r.Cause))
		e.time(r.At)
	}
	return e
}

func decodeStream(b []byte, consumer, stream string) (*store.Stream, error) {
	d := newDecoder(b)
	s := &store.Stream{Consumer: consumer, Stream: stream}
	s.Mode = store.StreamMode(d.str())
	s.HighWater = d.int()
	s.LastOutcome = store.State(d.str())
	s.LastRejection = decodeRejection(d)
	s.FinishedToken = d.int()
	s.Rejected = d.int()
	s.InFlight = d.int()
	s.Digest = d.bytes()
	s.FencingToken = d.int()
	s.Owner = d.str()
	s.LeaseExpiresAt, s.CreatedAt = d.time(), d.time()
	s.UpdatedAt, s.ExpiresAt = d.time(), d.time()
	s.Parked, s.ParkedBytes, s.Skipped = d.int(), d.int(), d.int()
	if d.bool() {
		s.LastSkipped = &store.SkippedRange{From: d.int(), To: d.int(), Cause: store.SkipCause(d.str()), At: d.time()}
	}
	if d.err != nil {
		return nil, d.err
	}
	return s, nil
}

func encodePolicy(p *store.ConsumerPolicy) []byte {
	e := encoder{valueVersion}
	for _, v := range []time.Duration{p.CompletedTTL, p.RejectedTTL, p.ReleasedTTL, p.DefaultLeaseTTL, p.MaxLeaseTTL} {
		e.dur(v)
	}
	e.int(p.MaxResultBytes)
	e.bool(p.RequireDigest)
	e.time(p.UpdatedAt)
	return e
}

func decodePolicy(b []byte, consumer string) (store.ConsumerPolicy, error) {
	d := newDecoder(b)
	p := store.ConsumerPolicy{Consumer: consumer}
	for _, v := range []*time.Duration{&p.CompletedTTL, &p.RejectedTTL, &p.ReleasedTTL, &p.DefaultLeaseTTL, &p.MaxLeaseTTL} {
		*v = d.dur()
	}
	p.MaxResultBytes = d.int()
	p.RequireDigest = d.bool()
	p.UpdatedAt = d.time()
	return p, d.err
}

func encodeStreamPolicy(p *store.ConsumerStreamPolicy) []byte {
	e := encoder{valueVersion}
	e.dur(p.StreamTTL)
	e.str(string(p.Mode))
	e.str(string(p.Start))
	e.int(p.MaxParked)
	e.dur(p.GapTimeout)
	e.str(string(p.OnGapTimeout))
	e.time(p.UpdatedAt)
	return e
}

func decodeStreamPolicy(b []byte, consumer string) (store.ConsumerStreamPolicy, error) {
	d := newDecoder(b)
	p := store.ConsumerStreamPolicy{Consumer: consumer}
	p.StreamTTL = d.dur()
	p.Mode = store.StreamMode(d.str())
	p.Start = store.StreamStart(d.str())
	p.MaxParked = d.int()
	p.GapTimeout = d.dur()
	p.OnGapTimeout = store.GapAction(d.str())
	p.UpdatedAt = d.time()
	return p, d.err
}

func encodeParked(ev *store.ParkedEvent) []byte {
	e := encoder{valueVersion}
	e.bytes(ev.Digest)
	e.bytes(ev.Payload)
	e.int(ev.PayloadBytes)
	e.time(ev.ParkedAt)
	return e
}

// decodeParked reads a parked event; its payload only when payload is set.
func decodeParked(b []byte, consumer, stream string, seq int64, payload bool) (store.ParkedEvent, error) {
	d := newDecoder(b)
	ev := store.ParkedEvent{Consumer: consumer, Stream: stream, Sequence: seq}
	ev.Digest = d.bytes()
	if p := d.bytes(); payload {
		ev.Payload = p
	}
	ev.PayloadBytes = d.int()
	ev.ParkedAt = d.time()
	return ev, d.err
}
