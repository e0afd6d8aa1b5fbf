package client

import (
	"math"
	"strings"
	"testing"
)

// TestFormatES6Number checks the number serialization against the table of
// IEEE 754 bit patterns in RFC 8785, Appendix B.
func TestFormatES6Number(t *testing.T) {
	tests := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, tt := range tests {
		if got := FormatES6Number(math.Float64frombits(tt.bits)); got != tt.want {
			t.Errorf("FormatES6Number(%#016x) = %s, want %s", tt.bits, got, tt.want)
		}
	}
}

// TestCanonicalJSON checks the canonical form of every JSON vector against
// an expected form written by hand from RFC 8785, not computed.
func TestCanonicalJSON(t *testing.T) {
	for _, v := range jsonVectors {
		t.Run(v.name, func(t *testing.T) {
			got, err := CanonicalJSON([]byte(v.input))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != v.canonical {
				t.Errorf("canonical form\n got %s\nwant %s", got, v.canonical)
			}
			again, err := CanonicalJSON(got)
			if err != nil || string(again) != string(got) {
				t.Errorf("canonical form is not a fixed point: %s, %v", again, err)
			}
		})
	}
}

func TestCanonicalJSONRefusesNonIJSON(t *testing.T) {
	tests := []struct{ name, input, wantErr string }{
		{"duplicate name", `{"a":1,"a":2}`, "duplicate member"},
		{"nested duplicate", `[{"x":{"k":1,"k":1}}]`, "duplicate member"},
		{"number too large", `[1e400]`, "does not fit"},
		{"invalid utf-8", "\"\xff\"", "not valid UTF-8"},
		{"trailing data", `{} {}`, "data after"},
		{"syntax error", `{"a" 1}`, "invalid"},
		{"empty input", ``, "EOF"},
		{"lone high surrogate", `"\ud800"`, "lone surrogate"},
		{"lone low surrogate", `["\uDC00"]`, "lone surrogate"},
		{"high surrogate then a letter", `"\ud83dx"`, "lone surrogate"},
		{"high surrogate then a non-surrogate escape", `"\ud83d\u0041"`, "lone surrogate"},
		{"two high surrogates", `"\ud83d\ud83d"`, "lone surrogate"},
		{"lone surrogate in a name", `{"a\\\ud800":1}`, "lone surrogate"},
		{"lone surrogate after an escaped quote", `["\"\udfff"]`, "lone surrogate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CanonicalJSON([]byte(tt.input))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("CanonicalJSON(%q) error = %v, want one containing %q", tt.input, err, tt.wantErr)
			}
		})
	}
}

// Escaped surrogate pairs are one character, and an escaped backslash
// before "u" is no escape: neither is refused as a lone surrogate.
func TestCanonicalJSONSurrogateEscapes(t *testing.T) {
	tests := []struct{ input, want string }{
		{`"\ud83d\ude00"`, "\"\U0001F600\""},
		{`["\uD83D\uDE00x","\ud83d\ude00\ud83d\ude00"]`, "[\"\U0001F600x\",\"\U0001F600\U0001F600\"]"},
		{`"\\ud800"`, `"\\ud800"`},
		{`"\\\ud83d\ude00"`, "\"\\\\\U0001F600\""},
		{`{"\ud83d\ude00":"\u00e9"}`, "{\"\U0001F600\":\"\u00e9\"}"},
	}
	for _, tt := range tests {
		got, err := CanonicalJSON([]byte(tt.input))
		if err != nil || string(got) != tt.want {
			t.Errorf("CanonicalJSON(%s) = %s, %v; want %s", tt.input, got, err, tt.want)
		}
	}
}
