package httpidem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/dedupd/dedupd/client"
)

// ReasonNotStored is the rejection reason of a key whose first response was
// too large to store (a replay answers 409, ProblemResponseNotStored).
const ReasonNotStored = "HTTP_RESPONSE_NOT_STORED"

// Middleware makes the requests its rules select idempotent. It is safe
// for concurrent use.
type Middleware struct {
	cfg Config
	// own are the response headers the middleware sets, never stored.
	own []string
}

// New checks cfg and fills in its defaults.
func New(cfg Config) (*Middleware, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Middleware{cfg: cfg, own: []string{cfg.ReplayedHeader, cfg.RetentionHeader}}, nil
}

// Handler wraps next.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { m.serve(next, w, r) })
}

// attemptState is what the handler of a first request reports back.
type attemptState struct{ upstreamErr error }

type stateKey struct{}

// ReportUpstreamError tells the middleware that the handler serving r could
// not get a response from its upstream (a reverse proxy's ErrorHandler
// calls it), so that Config.OnUpstreamError decides the key, whatever the
// handler then writes. r is the request the handler got, or one derived
// from it.
func ReportUpstreamError(r *http.Request, err error) {
	if st, ok := r.Context().Value(stateKey{}).(*attemptState); ok && st.upstreamErr == nil {
		st.upstreamErr = err
	}
}

// firstRun is what the first request's handler left, if it ran here.
type firstRun struct {
	capture *capture
	token   int64
	key     string // the dedupd key
}

func (m *Middleware) serve(next http.Handler, w http.ResponseWriter, r *http.Request) {
	// Only the middleware sets the fencing token: a client's would let it
	// pose as the holder of any token.
	r.Header.Del(m.cfg.FencingHeader)
	lines := r.Header.Values(m.cfg.KeyHeader)
	switch n := need(m.cfg.Rules, r.Method, r.URL.Path); {
	case n == Off, n == Optional && len(lines) == 0:
		next.ServeHTTP(w, r)
		return
	case len(lines) == 0:
		m.problem(w, ProblemKeyMissing, http.StatusBadRequest, m.cfg.KeyHeader+" is missing",
			fmt.Sprintf("%s %s requires an %s header, so that a retry cannot run it twice", r.Method, r.URL.Path, m.cfg.KeyHeader), "", 0)
		return
	}
	key, err := parseKey(lines)
	if err != nil {
		m.problem(w, ProblemKeyInvalid, http.StatusBadRequest, m.cfg.KeyHeader+" is not valid", err.Error(), "", 0)
		return
	}
	body, ok := m.readBody(w, r, key)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), max(m.cfg.Wait, 0)+m.cfg.Timeout)
	defer cancel()
	run := firstRun{key: recordKey(scope(r, m.cfg.IdentityHeader), key)}
	res, err := m.cfg.Client.Do(ctx, m.cfg.Consumer, run.key,
		fingerprint(r, body, m.cfg.FingerprintHeaders),
		client.DoOptions{LeaseTTL: m.cfg.LeaseTTL, MaxWait: m.cfg.Wait, Owner: "httpidem"},
		func(ctx context.Context, a client.Attempt) ([]byte, error) {
			return m.runFirst(ctx, next, w, r, body, a, &run)
		})
	m.answer(w, r, key, res, err, run)
}

// readBody reads a keyed request's body whole (it is fingerprinted before
// the handler runs), refusing one over MaxRequestBytes with 413 before
// anything else sees it.
func (m *Middleware) readBody(w http.ResponseWriter, r *http.Request, key string) ([]byte, bool) {
	limit := m.cfg.MaxRequestBytes
	tooLarge := func() {
		m.problem(w, ProblemBodyTooLarge, http.StatusRequestEntityTooLarge, "Request body too large",
			fmt.Sprintf("a request with an %s may carry at most %d bytes", m.cfg.KeyHeader, limit), key, 0)
	}
	if r.ContentLength > limit {
		tooLarge()
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var over *http.MaxBytesError
	switch {
	case errors.As(err, &over):
		tooLarge()
		return nil, false
	case err != nil:
		m.problem(w, ProblemBodyUnreadable, http.StatusBadRequest, "Request body unreadable", err.Error(), key, 0)
		return nil, false
	}
	return body, true
}

// runFirst runs the handler for the request that holds the key, and
// decides what its response does to the key.
func (m *Middleware) runFirst(ctx context.Context, next http.Handler, w http.ResponseWriter, r *http.Request,
	body []byte, a client.Attempt, run *firstRun) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	defer cancel()
	st := &attemptState{}
	inner := r.Clone(context.WithValue(ctx, stateKey{}, st))
	inner.Body = io.NopCloser(bytes.NewReader(body))
	inner.ContentLength = int64(len(body))
	inner.TransferEncoding = nil
	inner.Header.Set(m.cfg.FencingHeader, strconv.FormatInt(a.FencingToken, 10))
	c := newCapture(w, m.cfg.MaxStoredResponseBytes)
	run.capture, run.token = c, a.FencingToken
	next.ServeHTTP(c, inner)
	status := c.finalStatus()
	switch {
	case c.passed:
		return nil, client.Terminal(ReasonNotStored, fmt.Errorf(
			"the first response (status %d) was larger than the %d bytes this gateway stores, so it went to the first request only",
			status, m.cfg.MaxStoredResponseBytes), nil)
	case st.upstreamErr != nil:
		return nil, failed(m.cfg.OnUpstreamError, fmt.Errorf("upstream: %w", st.upstreamErr))
	case status >= 500 && m.cfg.On5xx != Store:
		return nil, failed(m.cfg.On5xx, fmt.Errorf("upstream answered %d", status))
	case status == http.StatusRequestTimeout || status == http.StatusTooEarly || status == http.StatusTooManyRequests:
		// These say the request was not processed: a retry must run it.
		return nil, fmt.Errorf("upstream answered %d: not processed", status)
	}
	return encodeResponse(status, storable(c.header, m.own...), c.body.Bytes()), nil
}

// failed is the error that makes Do record a failure as f says.
func failed(f Failure, err error) error {
	if f == Keep {
		return client.Unknown(err)
	}
	return err
}
