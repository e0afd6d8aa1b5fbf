package main

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/dedupd/dedupd/internal/duration"
	"github.com/dedupd/dedupd/internal/resultview"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// formatProtoDuration is formatDuration for an optional proto field; unset
// is "-".
func formatProtoDuration(d *durationpb.Duration) string {
	if d == nil {
		return "-"
	}
	return duration.Format(d.AsDuration())
}

// sizeUnits are the binary units, largest first.
var sizeUnits = []struct {
	name string
	size int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}

// formatSize writes n bytes in the largest binary unit that holds it
// exactly (64KiB, 1MiB), else in bytes (1500B), so that it parses back with
// parseSize to the same number.
func formatSize(n int64) string {
	if n != 0 {
		for _, u := range sizeUnits {
			if n%u.size == 0 {
				return strconv.FormatInt(n/u.size, 10) + u.name
			}
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// formatAge writes how long ago (or how far ahead) t is from now, rounded
// to what a reader cares about: seconds under an hour, minutes above.
func formatAge(t, now time.Time) string {
	d := now.Sub(t)
	suffix, prefix := " ago", ""
	if d < 0 {
		d, suffix, prefix = -d, "", "in "
	}
	if d < time.Second {
		return "now"
	}
	if d < time.Hour {
		d = d.Round(time.Second)
	} else {
		d = d.Round(time.Minute)
	}
	return prefix + duration.Format(d) + suffix
}

// formatTime writes a timestamp as RFC 3339 in UTC to the second, followed
// by its age relative to now; unset is "-".
func formatTime(ts *timestamppb.Timestamp, now time.Time) string {
	if ts == nil {
		return "-"
	}
	t := ts.AsTime()
	return t.UTC().Format(time.RFC3339) + " (" + formatAge(t, now) + ")"
}

// formatRelative writes only the age of a timestamp; unset is "-".
func formatRelative(ts *timestamppb.Timestamp, now time.Time) string {
	if ts == nil {
		return "-"
	}
	return formatAge(ts.AsTime(), now)
}

// formatLease writes when a lease runs out: "expired 49s ago" once it
// has, so that a reader does not take the age for the lease's own.
func formatLease(ts *timestamppb.Timestamp, now time.Time) string {
	if ts != nil && !ts.AsTime().After(now) {
		return "expired " + formatAge(ts.AsTime(), now)
	}
	return formatRelative(ts, now)
}

// formatBytes writes a stored result or detail on one line, as
// internal/resultview reads it: text, compact JSON, a stored HTTP
// response's status and body, or hex.
func formatBytes(b []byte) string { return resultview.Decode(b).Summary() }

// formatDigest writes a digest, which is a hash and never text, in hex.
func formatDigest(b []byte) string {
	if len(b) == 0 {
		return "-"
	}
	return "hex:" + hex.EncodeToString(b)
}

// truncate shortens s to at most n runes for a table column.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// stateName is a state without its STATE_ prefix: PENDING, COMPLETED.
func stateName(s dedupv1.State) string {
	return strings.TrimPrefix(s.String(), "STATE_")
}

// outcomeName is how the last event of a stream ended: COMPLETED or
// REJECTED, or "-" when none has ended since the stream was created or
// reset (the server leaves the state unspecified then).
func outcomeName(s dedupv1.State) string {
	if s == dedupv1.State_STATE_UNSPECIFIED {
		return "-"
	}
	return stateName(s)
}

// countOf writes n and a noun in the number n calls for: "1 record",
// "2 records". plural is the noun's plural form.
func countOf(n int64, singular, plural string) string {
	if n == 1 {
		return "1 " + singular
	}
	return strconv.FormatInt(n, 10) + " " + plural
}

// recordCount is countOf for the noun dedupctl counts most.
func recordCount(n int64) string { return countOf(n, "record", "records") }

// formatRejection writes a stored rejection on one line.
func formatRejection(r *dedupv1.Rejection) string {
	if r == nil {
		return "-"
	}
	s := r.GetReason()
	if r.GetMessage() != "" {
		s += ": " + r.GetMessage()
	}
	if len(r.GetDetail()) > 0 {
		s += " [detail " + formatBytes(r.GetDetail()) + "]"
	}
	if r.GetRetryable() {
		s += " (retryable)"
	}
	return s
}

// escapeCell makes a table cell safe to print on a terminal, as ls and
// kubectl do: a stored key, owner or reason is whatever a caller sent, and
// an escape sequence in one could clear the screen or draw a fake row.
// Every character that is not printable (control characters, tabs and
// newlines, invisible format characters such as U+202E, which reverses
// the text after it) is written as a Go escape (\x1b, \n, \u202e), bytes
// that are not UTF-8 as \xff, and a backslash as \\, so that the escaped
// form reads back unambiguously. JSON output is left as it is: it escapes
// by itself.
func escapeCell(s string) string {
	clean := true
	for _, r := range s {
		if r == '\\' || r == utf8.RuneError || !unicode.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r) // '\x1b', '\n', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}
