// Package client is the Go client of dedupd.
//
// It has three layers. Client wraps every DedupService RPC with Go types and
// typed errors (ErrDigestMismatch, ErrLeaseLost, ... usable with errors.Is,
// and *Error for the gRPC status, ErrorInfo reason and stored record). Do is
// the two-phase pattern done for you: claim, settle (on a takeover, ask the
// caller's SettleFunc whether an earlier holder already did the effect),
// run the caller's function with the fencing token, keep the lease alive,
// then Complete or Reject, leave the claim PENDING when the outcome is
// unknown, and replay stored outcomes without running the function.
// Reconciler walks the claims whose lease ran out and settles each one with
// the same SettleFunc.
//
// Digest, DigestJSON and DigestProto implement the versioned digest spec of
// docs/guarantees.md, which every dedupd client reproduces byte for byte;
// testdata/digest-vectors.json holds the shared test vectors.
//
// Against a dedupd with --auth-tokens, pass WithBearerToken, and for TLS
// WithTLS with a configuration from LoadTLSConfig (a client certificate
// listed in the auth file stands for a token under mutual TLS). The
// package reads no environment variable: credentials come from the
// caller, who may take them from wherever it keeps secrets. Refusals are
// ErrUnauthenticated and ErrPermissionDenied.
package client
