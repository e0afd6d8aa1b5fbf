package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	cases := []struct {
		name, in string
		max      int
		want     string
	}{
		{"short stays", "inventory", 16, "inventory"},
		{"exactly max stays", "abcd", 4, "abcd"},
		{"long is cut and marked", "abcdef", 4, "abcd" + Marker},
		{"a cut never splits a character", "aé" + "b", 2, "a" + Marker}, // é is 2 bytes at offset 1
		{"invalid UTF-8 is replaced", "a\xffb", 8, "a\uFFFDb"},
		{"replacements never pass max", "\xffa\xffa\xff", 8, "\uFFFDa\uFFFDa" + Marker},
		{"a megabyte becomes max bytes", strings.Repeat("x", 1<<20), 128, strings.Repeat("x", 128) + Marker},
	}
	for _, tc := range cases {
		got := String(tc.in, tc.max)
		if got != tc.want {
			t.Errorf("%s: String(%d bytes, %d) = %q, want %q", tc.name, len(tc.in), tc.max, got, tc.want)
		}
		if !utf8.ValidString(got) || len(got) > tc.max+len(Marker) {
			t.Errorf("%s: %q is not valid UTF-8 within the bound", tc.name, got)
		}
	}
}
