// Package httpidem is an Idempotency-Key middleware for net/http, built on
// the dedupd Go client: put it in front of any handler (or of a reverse
// proxy, as `dedupd gateway` does) and a POST or PATCH that carries an
// Idempotency-Key runs once; a retry with the same key gets the first
// response back, byte for byte, with Idempotent-Replayed: true.
//
// It follows draft-ietf-httpapi-idempotency-key-header:
//
//   - a request that needs a key (Rules) and has none gets 400;
//   - a key reused with another request (method, path, query, Content-Type,
//     body, and any FingerprintHeaders) gets 422;
//   - a retry while the first request runs waits up to Wait for its
//     outcome, then gets 409 with Retry-After;
//   - errors are application/problem+json (RFC 9457), with a type URI per
//     case (ProblemBase);
//   - keys are scoped per client (a hash of the Authorization header, or of
//     IdentityHeader), so two clients' keys never meet.
//
// Each key is a dedupd record of Config.Consumer: the first request claims
// it and runs the handler with the fencing token in the FencingHeader;
// responses with a status below 500 are stored with Complete (408, 425
// and 429 excepted: they say the request was not processed) and replayed
// from then on; a 5xx, or an upstream the handler could not reach,
// releases the key (Config.On5xx, Config.OnUpstreamError), so the next
// retry runs again. A response larger than MaxStoredResponseBytes is
// passed through unstored, and its key answers 409 from then on. The full
// behaviour is in docs/gateway.md.
package httpidem
