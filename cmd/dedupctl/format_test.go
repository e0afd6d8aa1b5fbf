package main

import (
	"bytes"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

func TestFormatSize(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0B"},
		{100, "100B"},
		{1024, "1KiB"},
		{1536, "1536B"},
		{64 << 10, "64KiB"},
		{1 << 20, "1MiB"},
		{1536 << 10, "1536KiB"},
		{2 << 30, "2GiB"},
	}
	for _, tt := range tests {
		if got := formatSize(tt.in); got != tt.want {
			t.Errorf("formatSize(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFormatAge(t *testing.T) {
	now := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		t    time.Time
		want string
	}{
		{now, "now"},
		{now.Add(-400 * time.Millisecond), "now"},
		{now.Add(-3*time.Minute - 12*time.Second), "3m12s ago"},
		{now.Add(-26*time.Hour - 40*time.Second), "26h1m ago"},
		{now.Add(72 * time.Hour), "in 72h"},
		{now.Add(45 * time.Second), "in 45s"},
	}
	for _, tt := range tests {
		if got := formatAge(tt.t, now); got != tt.want {
			t.Errorf("formatAge(now%+v) = %q, want %q", tt.t.Sub(now), got, tt.want)
		}
	}
	ts := timestamppb.New(now.Add(-time.Hour))
	if got, want := formatTime(ts, now), "2026-01-10T11:00:00Z (1h ago)"; got != want {
		t.Errorf("formatTime = %q, want %q", got, want)
	}
	if got := formatTime(nil, now); got != "-" {
		t.Errorf("formatTime(nil) = %q, want -", got)
	}
	for _, tc := range []struct {
		ts   *timestamppb.Timestamp
		want string
	}{
		{timestamppb.New(now.Add(-49 * time.Second)), "expired 49s ago"},
		{timestamppb.New(now.Add(30 * time.Second)), "in 30s"},
		{nil, "-"},
	} {
		if got := formatLease(tc.ts, now); got != tc.want {
			t.Errorf("formatLease = %q, want %q", got, tc.want)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	tests := []struct {
		in   []byte
		want string
	}{
		{nil, "-"},
		{[]byte("ok"), "ok"},
		{[]byte(`{"id": 42}`), `{"id":42}`},
		{[]byte("grüße"), "grüße"},
		{[]byte{0xff, 0x00}, "hex:ff00 (2 bytes)"},
		{[]byte("two\nlines"), "two lines"},
		{[]byte("tab\there"), "tab here"},
	}
	for _, tt := range tests {
		if got := formatBytes(tt.in); got != tt.want {
			t.Errorf("formatBytes(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := formatDigest([]byte{0xab, 0xcd}); got != "hex:abcd" {
		t.Errorf("formatDigest = %q", got)
	}
}

func TestFormatRejection(t *testing.T) {
	r := &dedupv1.Rejection{Reason: "OUT_OF_STOCK", Message: "sold out", Retryable: true}
	if got, want := formatRejection(r), "OUT_OF_STOCK: sold out (retryable)"; got != want {
		t.Errorf("formatRejection = %q, want %q", got, want)
	}
	if got := formatRejection(nil); got != "-" {
		t.Errorf("formatRejection(nil) = %q", got)
	}
}

func TestTruncate(t *testing.T) {
	if got := truncate("abcdef", 4); got != "abc…" {
		t.Errorf("truncate = %q", got)
	}
	if got := truncate("äbc", 3); got != "äbc" {
		t.Errorf("truncate = %q", got)
	}
}

func TestRenderBar(t *testing.T) {
	tests := []struct {
		done, total int64
		want        string
	}{
		{0, -1, "deleted 0 so far"},
		{500, -1, "deleted 500 so far"},
		{0, 10, "[..............................] 0/10 deleted (0%)"},
		{5, 10, "[###############...............] 5/10 deleted (50%)"},
		{10, 10, "[##############################] 10/10 deleted (100%)"},
		// More than counted: records that matched after the count.
		{12, 10, "[##############################] 12/10 deleted (100%)"},
	}
	for _, tt := range tests {
		if got := renderBar(tt.done, tt.total); got != tt.want {
			t.Errorf("renderBar(%d, %d) = %q, want %q", tt.done, tt.total, got, tt.want)
		}
	}
	var buf bytes.Buffer
	p := &barProgress{w: &buf, total: 2}
	p.update(1)
	p.update(2)
	p.finish()
	p.finish()
	if got, want := buf.String(), "\r"+renderBar(1, 2)+"\r"+renderBar(2, 2)+eraseLine; got != want { // erased once, at the end
		t.Errorf("bar output %q, want %q", got, want)
	}
}

func TestEscapeCell(t *testing.T) {
	cases := []struct{ in, want string }{
		{"order-1", "order-1"},
		{"ключ/🔑 with 'quotes' and spaces", "ключ/🔑 with 'quotes' and spaces"},
		{"\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},                 // clear screen, cursor home
		{"k\nfake COMPLETED row", `k\nfake COMPLETED row`}, // a second line
		{"a\tb", `a\tb`}, // a tab would shift the columns
		{"a\rb", `a\rb`}, // a carriage return overwrites
		{"evil\u202etxt.exe", `evil\u202etxt.exe`},         // right-to-left override
		{"bad\xffutf8", `bad\xffutf8`},                     // not UTF-8
		{`back\slash`, `back\\slash`},                      // escapes read back unambiguously
		{"\x07bell\x00nul\x7fdel", `\abell\x00nul\x7fdel`}, // BEL, NUL, DEL
		{"\U0010FFFF", `\U0010ffff`},                       // a non-character
	}
	for _, tc := range cases {
		if got := escapeCell(tc.in); got != tc.want {
			t.Errorf("escapeCell(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
