package httpidem

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// MaxKeyChars is the longest idempotency key accepted (Stripe's limit).
const MaxKeyChars = 255

// parseKey reads the idempotency key from the header's field lines. The
// draft makes the field a Structured Field String ("a1", RFC 8941 3.3.3),
// and most clients (Stripe's among them) send a bare token (a1): both are
// the same key. Parameters after a String (";p=1") are ignored, as RFC
// 8941 lets a recipient do. The key is 1 to MaxKeyChars printable ASCII
// characters.
func parseKey(lines []string) (string, error) {
	if len(lines) != 1 {
		return "", fmt.Errorf("the header appears %d times; send it once", len(lines))
	}
	v := strings.Trim(lines[0], " \t")
	var key string
	if strings.HasPrefix(v, `"`) {
		s, rest, err := sfString(v)
		if err != nil {
			return "", err
		}
		if rest = strings.TrimLeft(rest, " \t"); rest != "" && rest[0] != ';' {
			return "", errors.New("unexpected text after the quoted string")
		}
		key = s
	} else {
		for i := range len(v) {
			if c := v[i]; c <= ' ' || c > '~' || c == '"' || c == ',' || c == ';' {
				return "", fmt.Errorf("a bare key may hold printable ASCII but no space, quote, comma or semicolon; byte %d is %q", i, c)
			}
		}
		key = v
	}
	switch {
	case key == "":
		return "", errors.New("the key is empty")
	case len(key) > MaxKeyChars:
		return "", fmt.Errorf("the key is %d characters, more than %d", len(key), MaxKeyChars)
	}
	return key, nil
}

// sfString parses an RFC 8941 sf-string at the start of v and returns it
// and what follows the closing quote.
func sfString(v string) (string, string, error) {
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"':
			return b.String(), v[i+1:], nil
		case c == '\\':
			if i+1 == len(v) || (v[i+1] != '"' && v[i+1] != '\\') {
				return "", "", errors.New(`a backslash in a quoted key must escape " or \`)
			}
			i++
			b.WriteByte(v[i])
		case c < ' ' || c > '~':
			return "", "", fmt.Errorf("a quoted key holds printable ASCII only; byte %d is %q", i, c)
		default:
			b.WriteByte(c)
		}
	}
	return "", "", errors.New("the quoted key has no closing quote")
}

// scope is the client identity a key belongs to: a hash of the identity
// header's value (the whole Authorization header by default), so that
// dedupd never stores a credential and two clients' keys never collide.
// Requests without one share the scope "anonymous".
func scope(r *http.Request, header string) string {
	v := r.Header.Values(header)
	if len(v) == 0 {
		return "anonymous"
	}
	h := sha256.New()
	for _, line := range v {
		h.Write([]byte(line))
		h.Write([]byte{0})
	}
	return "id:" + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// recordKey is the dedupd key of an idempotency key within a scope; the
// scope has no space, so the pair reads back unambiguously.
func recordKey(scope, key string) string { return scope + " " + key }
