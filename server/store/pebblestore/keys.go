package pebblestore

import (
	"bytes"
	"encoding/binary"
	"time"
)

// The key space. Every key starts with one byte naming its table, so that
// each table is one contiguous, bytewise-ordered range:
//
//	meta  0x00 name                                  format version
//	'c'   consumer                                   key policy
//	'd'   consumer                                   stream policy
//	'r'   tuple(consumer, key)                       record
//	'e'   time(expires_at) tuple(consumer, key)      expiry index of records
//	'p'   tuple(consumer, key) -> time(lease)        index of Pending records
//	's'   tuple(consumer, stream)                    stream
//	'x'   time(expires_at) tuple(consumer, stream)   expiry index of streams
//	'q'   tuple(consumer, stream) -> time(lease)     index of in-flight streams
//	'w'   tuple(consumer, stream)                    index of streams with parked events
//	'k'   esc(consumer) esc(stream) u64(sequence)    parked event
//
// tuple(consumer, name) is the consumer with each 0x00 written 0x00 0xff,
// then the terminator 0x00 0x01, then the name as it is. It sorts as
// (consumer, name) compared bytewise, which is the order every store
// lists in, and a consumer's entries form one range. time is the
// microseconds since the Unix epoch, big-endian with the sign bit flipped,
// so that bytes sort as times do.
//
// The indexes are written in the same batch as the row they index, so they
// are never out of step with it: 'e' lets the reaper find what has expired
// without reading anything live, and 'p' and 'q' are the reconciliation
// queues (records and streams whose lease may have run out), whose
// listings read only what is in flight.
const (
	tableMeta          = 0x00
	tablePolicy        = 'c'
	tableStreamPolicy  = 'd'
	tableRecord        = 'r'
	tableRecordExpiry  = 'e'
	tablePending       = 'p'
	tableStream        = 's'
	tableStreamExpiry  = 'x'
	tableStreamPending = 'q'
	tableStreamParked  = 'w'
	tableParked        = 'k'
)

var tupleTerminator = []byte{0x00, 0x01}

// appendTuple appends tuple(consumer, name) to b.
func appendTuple(b []byte, consumer, name string) []byte {
	return append(appendEscaped(b, consumer), name...)
}

// appendEscaped appends esc(s): s with each 0x00 written 0x00 0xff, then
// the terminator. It sorts as s does, and no esc(s) is a prefix of
// another's.
func appendEscaped(b []byte, s string) []byte {
	for i := range len(s) {
		b = append(b, s[i])
		if s[i] == 0x00 {
			b = append(b, 0xff)
		}
	}
	return append(b, tupleTerminator...)
}

// parkedPrefix is the start of every parked event of one stream: 'k'
// esc(consumer) esc(stream); the sequence follows, big-endian.
func parkedPrefix(consumer, stream string) []byte {
	return appendEscaped(appendEscaped([]byte{tableParked}, consumer), stream)
}

func parkedKey(consumer, stream string, seq int64) []byte {
	return binary.BigEndian.AppendUint64(parkedPrefix(consumer, stream), uint64(seq))
}

// consumerPrefix is the start of every entry of consumer in table.
func consumerPrefix(table byte, consumer string) []byte {
	return appendTuple([]byte{table}, consumer, "")
}

// rowKey is the key of a record or stream row, or of an entry in 'p' or 'q'.
func rowKey(table byte, consumer, name string) []byte {
	b := make([]byte, 1, 1+len(consumer)+2+len(name))
	b[0] = table
	return appendTuple(b, consumer, name)
}

// splitTuple reads tuple(consumer, name) back.
func splitTuple(b []byte) (consumer, name string, ok bool) {
	var c []byte
	for i := 0; i < len(b); i++ {
		if b[i] != 0x00 {
			c = append(c, b[i])
			continue
		}
		if i+1 >= len(b) {
			return "", "", false
		}
		switch b[i+1] {
		case 0xff:
			c = append(c, 0x00)
			i++
		case 0x01:
			return string(c), string(b[i+2:]), true
		default:
			return "", "", false
		}
	}
	return "", "", false
}

// appendTime appends a time in its sortable form.
func appendTime(b []byte, t time.Time) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(t.UnixMicro())^(1<<63))
}

func readTime(b []byte) time.Time {
	return time.UnixMicro(int64(binary.BigEndian.Uint64(b) ^ (1 << 63))).UTC()
}

// expiryKey is the key of a row's entry in an expiry index.
func expiryKey(table byte, expires time.Time, consumer, name string) []byte {
	// Sized as rowKey sizes its key (escapes aside), plus the time, so
	// that it is one allocation, not one per append.
	b := make([]byte, 1, 1+8+len(consumer)+len(tupleTerminator)+len(name))
	b[0] = table
	return appendTuple(appendTime(b, expires), consumer, name)
}

// expiredBound is the exclusive upper bound of the entries of an expiry
// index that have expired at now (expires_at <= now).
func expiredBound(table byte, now time.Time) []byte {
	return appendTime([]byte{table}, now.Add(time.Microsecond))
}

// prefixEnd is the smallest key greater than every key starting with p;
// nil when there is none (p is empty or all 0xff).
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
