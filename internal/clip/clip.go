// Package clip cuts text that a caller chose before dedupd repeats it, in
// an error it answers or a line it logs, so that no caller can make either
// as large as its request. It is the one rule for both: two limits
// (MaxEchoed, MaxLogged) and one cutter (String).
package clip

import (
	"strings"
	"unicode/utf8"
)

// The two limits, in bytes before the Marker. Every value dedupd repeats
// is cut to one of them, once, where it is written: an error's status in
// server/rpcerrors, a log line where it is built.
const (
	// MaxEchoed bounds each value an error repeats back to its caller (the
	// message and each ErrorInfo metadata value: consumer, key, stream,
	// field) and the cause an ERROR or WARN line quotes. It is the longest
	// key or stream id a request may carry, so a valid value is echoed
	// whole and a driver's message fits, while a value of megabytes cannot
	// make the answer as large as the request (the details travel in a
	// trailer, which clients refuse beyond 8 KiB or so).
	MaxEchoed = 512
	// MaxLogged bounds each caller-chosen value a log line holds (a
	// consumer name, a stream id, the text of the error a call got): a
	// valid consumer name fits whole. Consumers are logged before
	// validation, for refused calls too.
	MaxLogged = 128
)

// Marker ends a value that was cut, so that a reader knows it saw a part.
const Marker = "…"

// String returns s when it is at most limit bytes of valid UTF-8, and
// otherwise at most its first limit bytes followed by Marker: never more than
// limit+len(Marker) bytes, always valid UTF-8 (a protobuf string field
// refuses anything else). Bytes that are not UTF-8 become U+FFFD, and a cut
// never splits a character.
func String(s string, limit int) string {
	cut := len(s) > limit
	if cut {
		s = s[:limit] // before any copy: s may be megabytes
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > limit { // a replacement grew it, or the cut split a character
		s = s[:limit]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		cut = true
	}
	if cut {
		s += Marker
	}
	return s
}
