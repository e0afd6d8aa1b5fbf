package httpidem

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"net/http"
	"slices"
)

// fingerprintVersion names the fields below; change it with them.
const fingerprintVersion = "httpidem-fingerprint-1"

// fingerprint is the digest a key is bound to (dedupd answers a Claim with
// another digest DIGEST_MISMATCH, which is 422): the method, the escaped
// path, the raw query, the Content-Type, the SHA-256 of the body and the
// configured headers, each length-prefixed so that no two requests share
// an encoding.
func fingerprint(r *http.Request, body []byte, headers []string) []byte {
	h := sha256.New()
	field(h, fingerprintVersion)
	field(h, r.Method)
	field(h, r.URL.EscapedPath())
	field(h, r.URL.RawQuery)
	field(h, r.Header.Get("Content-Type"))
	sum := sha256.Sum256(body)
	field(h, string(sum[:]))
	names := make([]string, 0, len(headers))
	for _, n := range headers {
		names = append(names, http.CanonicalHeaderKey(n))
	}
	slices.Sort(names)
	for _, n := range slices.Compact(names) {
		field(h, n)
		values := r.Header.Values(n)
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(values))))
		for _, v := range values {
			field(h, v)
		}
	}
	return h.Sum(nil)
}

func field(h hash.Hash, s string) {
	h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(s))))
	h.Write([]byte(s))
}
