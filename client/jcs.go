package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// CanonicalJSON returns the RFC 8785 (JSON Canonicalization Scheme)
// serialization of one JSON text: object members sorted by the UTF-16 code
// units of their names, no insignificant whitespace, numbers formatted as
// ECMAScript's Number.prototype.toString does, strings with the minimal
// escaping JCS prescribes.
//
// The input must be I-JSON (RFC 7493): valid UTF-8, no escaped lone
// surrogate, no duplicate member names, numbers that fit an IEEE 754
// double. Anything else is an error rather than a guess, because two
// clients that guessed differently would compute different digests for
// the same request.
func CanonicalJSON(text []byte) ([]byte, error) {
	if !utf8.Valid(text) {
		return nil, errors.New("canonical json: input is not valid UTF-8")
	}
	if err := refuseLoneSurrogateEscapes(text); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var out bytes.Buffer
	if err := canonicalValue(dec, &out); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("canonical json: data after the JSON value")
	}
	return out.Bytes(), nil
}

// refuseLoneSurrogateEscapes finds a \uXXXX escape of a UTF-16 surrogate
// that is not half of an escaped pair. encoding/json would decode it to
// U+FFFD without a word, and the digest would then be that of another
// text, where the other clients refuse the input. Syntax errors are left
// to the decoder.
func refuseLoneSurrogateEscapes(text []byte) error {
	inString := false
	for i := 0; i < len(text); i++ {
		switch {
		case text[i] == '"':
			inString = !inString
		case text[i] == '\\' && inString:
			unit, ok := escapedUnit(text, i)
			if !ok {
				i++ // \" \\ \n ...: skip the escaped character
				continue
			}
			switch {
			case 0xD800 <= unit && unit < 0xDC00:
				if low, ok := escapedUnit(text, i+6); ok && 0xDC00 <= low && low < 0xE000 {
					i += 11 // the pair
					continue
				}
				return fmt.Errorf("lone surrogate %s at byte %d: not Unicode text", text[i:i+6], i)
			case 0xDC00 <= unit && unit < 0xE000:
				return fmt.Errorf("lone surrogate %s at byte %d: not Unicode text", text[i:i+6], i)
			}
			i += 5
		}
	}
	return nil
}

// escapedUnit reads the code unit of a \uXXXX escape at text[i:].
func escapedUnit(text []byte, i int) (uint16, bool) {
	if i+6 > len(text) || text[i] != '\\' || text[i+1] != 'u' {
		return 0, false
	}
	u, err := strconv.ParseUint(string(text[i+2:i+6]), 16, 16)
	return uint16(u), err == nil
}

// canonicalValue reads one value from dec and writes its canonical form.
func canonicalValue(dec *json.Decoder, out *bytes.Buffer) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return canonicalObject(dec, out)
		}
		return canonicalArray(dec, out)
	case string:
		writeJCSString(out, t)
	case json.Number:
		s, err := formatJCSNumber(string(t))
		if err != nil {
			return err
		}
		out.WriteString(s)
	case bool:
		out.WriteString(strconv.FormatBool(t))
	case nil:
		out.WriteString("null")
	}
	return nil
}

func canonicalArray(dec *json.Decoder, out *bytes.Buffer) error {
	out.WriteByte('[')
	for i := 0; dec.More(); i++ {
		if i > 0 {
			out.WriteByte(',')
		}
		if err := canonicalValue(dec, out); err != nil {
			return err
		}
	}
	_, err := dec.Token() // ']'
	out.WriteByte(']')
	return err
}

type jcsMember struct {
	name  string
	units []uint16
	value []byte
}

func canonicalObject(dec *json.Decoder, out *bytes.Buffer) error {
	var members []jcsMember
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name := tok.(string) // the decoder only yields strings as names
		if seen[name] {
			return fmt.Errorf("duplicate member name %q", name)
		}
		seen[name] = true
		var value bytes.Buffer
		if err := canonicalValue(dec, &value); err != nil {
			return err
		}
		members = append(members, jcsMember{name, utf16.Encode([]rune(name)), value.Bytes()})
	}
	if _, err := dec.Token(); err != nil { // '}'
		return err
	}
	// JCS sorts by UTF-16 code units, not by code points or UTF-8 bytes:
	// a character above U+FFFF (a surrogate pair, 0xD800..) sorts before
	// one in U+E000..U+FFFF.
	slices.SortFunc(members, func(a, b jcsMember) int { return slices.Compare(a.units, b.units) })
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			out.WriteByte(',')
		}
		writeJCSString(out, m.name)
		out.WriteByte(':')
		out.Write(m.value)
	}
	out.WriteByte('}')
	return nil
}

// writeJCSString escapes only what JCS requires: the quote, the backslash
// and the control characters below U+0020 (\b \t \n \f \r by name, the rest
// as \u00xx in lowercase hex). Everything else, '/' and U+2028 included, is
// written as itself.
func writeJCSString(out *bytes.Buffer, s string) {
	out.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			out.WriteString(`\"`)
		case '\\':
			out.WriteString(`\\`)
		case '\b':
			out.WriteString(`\b`)
		case '\t':
			out.WriteString(`\t`)
		case '\n':
			out.WriteString(`\n`)
		case '\f':
			out.WriteString(`\f`)
		case '\r':
			out.WriteString(`\r`)
		default:
			if r < 0x20 {
				fmt.Fprintf(out, `\u%04x`, r)
			} else {
				out.WriteRune(r)
			}
		}
	}
	out.WriteByte('"')
}

// formatJCSNumber parses a JSON number as an IEEE 754 double and formats it
// the way ECMAScript's Number.prototype.toString does.
func formatJCSNumber(text string) (string, error) {
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) {
		return "", fmt.Errorf("number %s does not fit an IEEE 754 double", text)
	}
	return FormatES6Number(f), nil
}

// FormatES6Number formats a finite double as ECMAScript's
// Number.prototype.toString: the shortest digits that round-trip, in plain
// notation for decimal exponents from -6 to 20 and in exponent notation
// (1e+21, 1e-7) outside it. Negative zero is "0".
func FormatES6Number(f float64) string {
	if f == 0 {
		return "0"
	}
	if f < 0 {
		return "-" + FormatES6Number(-f)
	}
	// Shortest round-trip digits d1.d2d3...e±x; value = 0.d1d2d3... × 10^n.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mantissa, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mantissa, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	n, k := x+1, len(digits)
	switch {
	case k <= n && n <= 21:
		return digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return "0." + strings.Repeat("0", -n) + digits
	}
	sign := "+"
	if n-1 < 0 {
		sign = "-"
	}
	exponent := sign + strconv.Itoa(abs(n-1))
	if k == 1 {
		return digits + "e" + exponent
	}
	return digits[:1] + "." + digits[1:] + "e" + exponent
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}
