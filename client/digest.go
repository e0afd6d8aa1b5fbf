package client

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/proto"
)

// DigestV1 is the algorithm byte of version 1 of the digest spec: the
// digest is this byte followed by SHA-256 of the input, 33 bytes in all.
// A future algorithm gets a new byte, so digests of two versions never
// compare equal by accident.
const DigestV1 byte = 0x01

// DigestSize is the length of a version 1 digest.
const DigestSize = 1 + sha256.Size

// Digest returns the version 1 digest of raw bytes: 0x01 || SHA-256(b).
func Digest(b []byte) []byte {
	sum := sha256.Sum256(b)
	return append([]byte{DigestV1}, sum[:]...)
}

// DigestJSON returns the digest of a JSON text's RFC 8785 canonical form,
// so that two encodings of the same JSON value (other key order, other
// whitespace, 1.0 vs 1) get the same digest.
func DigestJSON(text []byte) ([]byte, error) {
	canonical, err := CanonicalJSON(text)
	if err != nil {
		return nil, err
	}
	return Digest(canonical), nil
}

// DigestValue marshals v with encoding/json and digests the canonical form
// of the result.
func DigestValue(v any) ([]byte, error) {
	text, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("digest: %w", err)
	}
	return DigestJSON(text)
}

// DigestProto returns the digest of a message's deterministic wire form
// (proto.MarshalOptions{Deterministic: true}). Deterministic is not
// canonical across languages or library versions (unknown fields, map
// order); see docs/guarantees.md for when the bytes agree.
func DigestProto(m proto.Message) ([]byte, error) {
	wire, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("digest: %w", err)
	}
	return Digest(wire), nil
}
