// Package resultview shows a stored result as a person reads it: text as
// text, JSON pretty-printed, a response the HTTP gateway stored (status
// line, headers, body: client/httpidem's stored form) as that response,
// and any other bytes in hex. dedupctl uses it; anything else that shows
// results to people should too, so that a result reads the same
// everywhere. Terminal control characters are always escaped.
package resultview

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind is what a result is.
type Kind string

// The kinds of result.
const (
	Empty  Kind = "empty"
	Text   Kind = "text"
	JSON   Kind = "json"
	HTTP   Kind = "http"
	Binary Kind = "binary"
)

// MaxShown bounds the bytes of a result shown in hex or as text; the rest
// is counted, not shown (the whole is in dedupctl's -o json).
const MaxShown = 4 << 10

// View is a decoded result.
type View struct {
	Kind Kind
	raw  []byte
	// For HTTP: the status, the headers and the body's own view.
	Status int
	Header http.Header
	Body   *View
}

// Decode reads b as the most specific kind it is.
func Decode(b []byte) View {
	switch {
	case len(b) == 0:
		return View{Kind: Empty}
	case bytes.HasPrefix(b, []byte("HTTP/1.")):
		if v, ok := decodeHTTP(b); ok {
			return v
		}
	}
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') && json.Valid(trimmed) {
		return View{Kind: JSON, raw: b}
	}
	if text(b) {
		return View{Kind: Text, raw: b}
	}
	return View{Kind: Binary, raw: b}
}

// decodeHTTP reads a stored response: a status line, headers, and exactly
// Content-Length bytes of body.
func decodeHTTP(b []byte) (View, bool) {
	r := bufio.NewReader(bytes.NewReader(b))
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return View{}, false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || r.Buffered() > 0 {
		return View{}, false
	}
	h := resp.Header.Clone()
	h.Del("Content-Length")
	inner := Decode(body)
	return View{Kind: HTTP, raw: b, Status: resp.StatusCode, Header: h, Body: &inner}, true
}

// text reports whether b is UTF-8 text: printable runes, spaces, tabs and
// line breaks.
func text(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if !unicode.IsPrint(r) && r != '\n' && r != '\t' && r != '\r' && r != ' ' {
			return false
		}
	}
	return true
}

// Summary is the view on one line, for a table cell.
func (v View) Summary() string {
	switch v.Kind {
	case Empty:
		return "-"
	case JSON:
		var out bytes.Buffer
		if json.Compact(&out, v.raw) == nil {
			return oneLine(out.String())
		}
	case Text:
		return oneLine(string(v.raw))
	case HTTP:
		s := fmt.Sprintf("HTTP %d %s", v.Status, http.StatusText(v.Status))
		if ct := v.Header.Get("Content-Type"); ct != "" {
			s += ", " + oneLine(ct)
		}
		if v.Body.Kind != Empty {
			s += ": " + v.Body.Summary()
		}
		return s
	}
	return fmt.Sprintf("hex:%s (%d bytes)", hex.EncodeToString(v.raw[:min(len(v.raw), 32)])+ellipsis(len(v.raw) > 32), len(v.raw))
}

// Detail is the view on as many lines as it needs: JSON indented, an HTTP
// response as its status line, headers, a blank line and its body's
// detail, binary as a hex dump; at most MaxShown bytes of text or hex.
func (v View) Detail() string {
	switch v.Kind {
	case Empty:
		return "-"
	case JSON:
		var out bytes.Buffer
		if json.Indent(&out, bytes.TrimSpace(v.raw), "", "  ") == nil {
			return shown(out.String())
		}
	case Text:
		return shown(string(v.raw))
	case HTTP:
		var b strings.Builder
		fmt.Fprintf(&b, "HTTP/1.1 %d %s\n", v.Status, http.StatusText(v.Status))
		names := slices.Sorted(func(yield func(string) bool) {
			for n := range v.Header {
				if !yield(n) {
					return
				}
			}
		})
		for _, n := range names {
			for _, val := range v.Header[n] {
				fmt.Fprintf(&b, "%s: %s\n", escape(n), escape(val))
			}
		}
		if v.Body.Kind != Empty {
			b.WriteString("\n" + v.Body.Detail())
		}
		return strings.TrimSuffix(b.String(), "\n")
	}
	dump := hex.Dump(v.raw[:min(len(v.raw), MaxShown)])
	if len(v.raw) > MaxShown {
		dump += fmt.Sprintf("… %d more bytes", len(v.raw)-MaxShown)
	}
	return strings.TrimSuffix(dump, "\n")
}

// shown is s escaped, cut to MaxShown bytes with the rest counted.
func shown(s string) string {
	if len(s) <= MaxShown {
		return escape(strings.TrimSuffix(s, "\n"))
	}
	cut := s[:MaxShown]
	for !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	return escape(cut) + fmt.Sprintf("… %d more bytes", len(s)-len(cut))
}

// oneLine is s on one line: line breaks and tabs become spaces (Detail
// keeps them).
func oneLine(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ", "\t", " ").Replace(s)
	return escape(s)
}

// escape writes every control character but a line break or tab as a Go
// escape, so that stored bytes cannot drive the terminal.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '\n' || r == '\t' || unicode.IsPrint(r) || r == ' ' {
			b.WriteRune(r)
			continue
		}
		q := fmt.Sprintf("%+q", string(r))
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

func ellipsis(more bool) string {
	if more {
		return "…"
	}
	return ""
}
