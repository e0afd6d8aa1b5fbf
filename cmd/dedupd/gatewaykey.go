package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/dedupd/dedupd/client/httpidem"
)

// webhookPresets are the --webhooks names and where each provider puts the
// id that stays the same across redeliveries of one event.
var webhookPresets = map[string]string{
	"standard": "header:webhook-id",         // Standard Webhooks
	"github":   "header:X-GitHub-Delivery",  // GitHub
	"shopify":  "header:X-Shopify-Event-Id", // Shopify
	"svix":     "header:svix-id",            // Svix
	"stripe":   "json:/id",                  // Stripe: the event's id in the body
}

// keySource is where the gateway reads a request's key: a header (the
// middleware reads it there itself) or a JSON pointer into the body.
type keySource struct {
	header  string   // header:NAME
	pointer []string // json:/pointer, its reference tokens unescaped
	spec    string
}

// parseKeySource reads --key-from and --webhooks (one of them, or neither:
// then the key is the --key-header header, as without either).
func parseKeySource(keyFrom, webhooks string) (keySource, error) {
	if webhooks != "" {
		if keyFrom != "" {
			return keySource{}, errors.New("--webhooks and --key-from both say where the key is; give one")
		}
		spec, ok := webhookPresets[webhooks]
		if !ok {
			return keySource{}, fmt.Errorf("--webhooks %q: want standard, github, shopify, svix or stripe", webhooks)
		}
		keyFrom = spec
	}
	if keyFrom == "" {
		return keySource{}, nil
	}
	kind, rest, _ := strings.Cut(keyFrom, ":")
	switch {
	case kind == "header" && rest != "":
		return keySource{header: rest, spec: keyFrom}, nil
	case kind == "json" && strings.HasPrefix(rest, "/"):
		var tokens []string
		for t := range strings.SplitSeq(rest[1:], "/") {
			// RFC 6901 section 4: ~1 before ~0, so "~01" is "~1".
			tokens = append(tokens, strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~"))
		}
		return keySource{pointer: tokens, spec: keyFrom}, nil
	}
	return keySource{}, fmt.Errorf("--key-from %q: want header:NAME or json:/pointer (RFC 6901)", keyFrom)
}

// resolvePointer follows an RFC 6901 pointer's tokens into a decoded JSON
// document; a string or number found there is the key.
func resolvePointer(doc any, tokens []string) (string, bool) {
	for _, t := range tokens {
		switch v := doc.(type) {
		case map[string]any:
			next, ok := v[t]
			if !ok {
				return "", false
			}
			doc = next
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(v) || (len(t) > 1 && t[0] == '0') {
				return "", false
			}
			doc = v[i]
		default:
			return "", false
		}
	}
	switch v := doc.(type) {
	case string:
		return v, v != ""
	case json.Number:
		return v.String(), true
	}
	return "", false
}

// bodyKeyHandler puts the key it finds at the pointer into the middleware's
// key header, in place of any the client sent (the body alone names the
// key). The body is read at most maxBytes: a larger one gets the
// middleware's 413. A request the rules require a key of that has none
// there gets 400, as one without the header does.
func bodyKeyHandler(next http.Handler, m *httpidem.Middleware, src keySource, keyHeader string, maxBytes int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(keyHeader)
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
		var over *http.MaxBytesError
		switch {
		case errors.As(err, &over):
			m.WriteProblem(w, httpidem.ProblemBodyTooLarge, http.StatusRequestEntityTooLarge, "Request body too large",
				fmt.Sprintf("the gateway reads the key from bodies of at most %d bytes (--max-request-bytes)", maxBytes))
			return
		case err != nil:
			m.WriteProblem(w, httpidem.ProblemBodyUnreadable, http.StatusBadRequest, "Request body unreadable", err.Error())
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var doc any
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		key, found := "", false
		if dec.Decode(&doc) == nil {
			key, found = resolvePointer(doc, src.pointer)
		}
		switch {
		case found:
			r.Header.Set(keyHeader, key)
		case m.KeyRequired(r):
			m.WriteProblem(w, httpidem.ProblemKeyMissing, http.StatusBadRequest, "The request's key is missing",
				fmt.Sprintf("%s %s requires a JSON body with a string or number at %s, the key that makes a redelivery run once",
					r.Method, r.URL.Path, strings.TrimPrefix(src.spec, "json:")))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bodyKeyLimit is the most of a body read for its key: the middleware's
// own bound, so that no body it would take is refused here.
func bodyKeyLimit(maxRequestBytes int64) int64 {
	if maxRequestBytes <= 0 {
		return httpidem.DefaultMaxBytes
	}
	return maxRequestBytes
}
