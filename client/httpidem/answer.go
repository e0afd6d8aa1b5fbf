package httpidem

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/internal/clip"
)

// answer tells the client how its keyed request ended.
func (m *Middleware) answer(w http.ResponseWriter, r *http.Request, key string, res client.DoResult, err error, run firstRun) {
	var rejected *client.RejectedError
	var waited *client.InProgressError
	switch {
	case err == nil:
		m.replay(w, key, res)
	case run.capture != nil && run.capture.passed:
		// Sent as it came; the key says so to any retry.
		if !errors.As(err, &rejected) {
			m.log(r, key, "the key of a response too large to store was not marked", err)
		}
	case run.capture != nil:
		// The handler ran and its response is not stored: a 5xx or an
		// upstream failure (released or kept, by the config), a status
		// that asks for a retry, or dedupd failing to store it. The
		// client gets the response as it came.
		if !released(err) {
			m.log(r, key, "a response was sent unstored", err)
			m.markTooLarge(r, key, run, err)
		}
		c := run.capture
		storedResponse{status: c.finalStatus(), header: c.header, body: c.body.Bytes()}.write(w, nil)
	case errors.As(err, &rejected):
		kind, title := ProblemRejected, "This key holds a refusal"
		if rejected.Rejection.Reason == ReasonNotStored {
			kind, title = ProblemResponseNotStored, "The first response to this key was not stored"
		}
		m.problem(w, kind, http.StatusConflict, title, rejected.Rejection.Message, key, 0)
	case errors.Is(err, client.ErrDigestMismatch):
		m.problem(w, ProblemKeyReused, http.StatusUnprocessableEntity, m.cfg.KeyHeader+" is already used",
			"this key was first used with another request (method, path, query, Content-Type or body differ); use a new key for a new request", key, 0)
	case errors.As(err, &waited):
		left := time.Until(waited.Record.GetLeaseExpiresAt().AsTime())
		m.problem(w, ProblemInFlight, http.StatusConflict, "A request is outstanding for this key",
			"the first request with this key is still being processed; retry after Retry-After seconds to get its response", key, max(left, time.Second))
	case errors.Is(err, client.ErrUnavailable):
		m.log(r, key, "dedupd unavailable", err)
		m.problem(w, ProblemUnavailable, http.StatusServiceUnavailable, "Idempotency store unavailable",
			"nothing was sent on; retry with the same key", key, time.Second)
	default:
		m.log(r, key, "the request failed before the handler ran", err)
		m.problem(w, ProblemInternal, http.StatusInternalServerError, "Idempotency check failed",
			"nothing was sent on; retry with the same key", key, 0)
	}
}

// replay sends a stored response, first or replayed alike, with the
// key's expiry.
func (m *Middleware) replay(w http.ResponseWriter, key string, res client.DoResult) {
	sr, err := decodeResponse(res.Result)
	if err != nil {
		m.cfg.Logger.Warn("httpidem: unreadable stored response", "key", clip.String(key, 64), "err", err)
		m.problem(w, ProblemInternal, http.StatusInternalServerError, "Stored response unreadable",
			"the record of this key does not hold a response this gateway stored", key, 0)
		return
	}
	extra := http.Header{}
	if res.Replayed {
		extra.Set(m.cfg.ReplayedHeader, "true")
	}
	if exp := res.Record.GetExpiresAt(); exp != nil {
		extra.Set(m.cfg.RetentionHeader, exp.AsTime().UTC().Format(http.TimeFormat))
	}
	sr.write(w, extra)
}

// released says whether Do's error is the failure the middleware chose to
// record (a release, or a kept claim), rather than dedupd failing to
// record it.
func released(err error) bool {
	var refused *client.Error
	return !errors.As(err, &refused)
}

// markTooLarge rejects the key of a response dedupd refused to store for
// its size (the consumer's max_result_bytes is below what the middleware
// holds), so that a retry answers 409 rather than running the request
// again once the lease runs out.
func (m *Middleware) markTooLarge(r *http.Request, key string, run firstRun, err error) {
	var refused *client.Error
	if !errors.As(err, &refused) || !errors.Is(err, client.ErrInvalidArgument) || refused.Field != "result" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
	defer cancel()
	_, rerr := m.cfg.Client.Reject(ctx, m.cfg.Consumer, run.key, run.token, client.Rejection{Reason: ReasonNotStored,
		Message: "the first response was larger than the dedupd consumer's max_result_bytes, so it went to the first request only"})
	if rerr != nil {
		m.log(r, key, "marking a response dedupd would not store", rerr)
	}
}

func (m *Middleware) problem(w http.ResponseWriter, kind string, status int, title, detail, key string, retryAfter time.Duration) {
	writeProblem(w, m.cfg.ProblemBase, kind, status, title, detail, key, retryAfter)
}

func (m *Middleware) log(r *http.Request, key, msg string, err error) {
	m.cfg.Logger.LogAttrs(r.Context(), slog.LevelWarn, "httpidem: "+msg,
		slog.String("method", r.Method), slog.String("path", clip.String(r.URL.Path, 256)),
		slog.String("key", clip.String(key, 64)), slog.String("err", clip.String(err.Error(), 512)))
}
