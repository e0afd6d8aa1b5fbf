// Package openapi holds the OpenAPI 3.1 description of dedupd's HTTP/JSON
// API, generated from proto/dedup/v1 by internal/cmd/protoc-gen-dedupd-openapi
// (`buf generate`), and serves it.
package openapi

import (
	_ "embed"
	"net/http"
)

// Path is where `dedupd serve --http-listen` serves the description.
const Path = "/openapi.yaml"

//go:embed openapi.yaml
var document []byte

// Document is the committed description, byte for byte.
func Document() []byte { return document }

// Handler answers GET and HEAD with the description. It needs no
// credential: it says what the API accepts, nothing stored.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/yaml")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(document)
	})
}
